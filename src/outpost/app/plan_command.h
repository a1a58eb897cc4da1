// `outpost plan`: does it fit, how fast, how many users — predicted from a GGUF
// (metadata only) or a model description, and a hardware profile.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>

namespace outpost::app {

// Registers the subcommand's flags on `app`; RunPlan() runs it after parsing.
struct PlanFlags;
// The flags live as long as the returned pointer (CLI11 binds to their fields).
std::shared_ptr<PlanFlags> AddPlanCommand(CLI::App* app);
int RunPlan(const PlanFlags& flags);

}  // namespace outpost::app

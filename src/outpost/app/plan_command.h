// `outpost plan`: does it fit, how fast, how many users — predicted from a GGUF
// (metadata only) or a model description, and a hardware profile.
#pragma once

#include <CLI/CLI.hpp>

namespace outpost::app {

// Registers the subcommand's flags on `app`; RunPlan() runs it after parsing.
struct PlanFlags;
PlanFlags* AddPlanCommand(CLI::App* app);
int RunPlan(const PlanFlags& flags);

}  // namespace outpost::app

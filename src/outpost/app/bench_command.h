// `outpost bench`: measure bandwidth, prefill, decode, a concurrency sweep,
// memory truth and (optionally) sustained throughput on this machine.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>

namespace outpost::app {

struct BenchFlags;
// The flags live as long as the returned pointer (CLI11 binds to their fields).
std::shared_ptr<BenchFlags> AddBenchCommand(CLI::App* app);
int RunBenchCommand(const BenchFlags& flags);

}  // namespace outpost::app

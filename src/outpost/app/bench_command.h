// `outpost bench`: measure bandwidth, prefill, decode, a concurrency sweep,
// memory truth and (optionally) sustained throughput on this machine.
#pragma once

#include <CLI/CLI.hpp>

namespace outpost::app {

struct BenchFlags;
BenchFlags* AddBenchCommand(CLI::App* app);
int RunBenchCommand(const BenchFlags& flags);

}  // namespace outpost::app

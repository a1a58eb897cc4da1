// membw — prints the machine's memory bandwidth as JSON (the decode ceiling
// used by bench/bench.py). A thin front end over outpost::bench::MeasureBandwidth,
// the same probe `outpost bench` runs.
//
//   build/membw [--mib 1024] [--threads N] [--reps 5]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "outpost/bench/membw.h"

int main(int argc, char** argv) {
  size_t mib = 1024;
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  int reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--mib"))
      mib = std::strtoul(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--threads"))
      threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--reps"))
      reps = std::atoi(argv[i + 1]);
  }
  const auto bw = outpost::bench::MeasureBandwidth(threads, mib, reps);
  std::printf("{\"threads\": %d, \"array_mib\": %.0f, \"read_gbps\": %.2f, \"triad_gbps\": %.2f}\n",
              bw.threads, bw.array_bytes / 1048576.0, bw.read_bytes_per_s / 1e9,
              bw.triad_bytes_per_s / 1e9);
  return 0;
}

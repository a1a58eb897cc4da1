// UsableCpus — how many CPUs this process can really run on, for the default
// thread counts and for the warnings about settings above it.
//
// std::thread::hardware_concurrency() counts the machine's online CPUs. In a
// container, under taskset or a systemd unit with CPUAffinity= or CPUQuota=,
// that is more than the process gets, and llama.cpp's CPU backend with more
// threads than CPUs waits at every barrier of every step for a thread that is
// not running: on a 2-vCPU box, 3 or 4 decode threads ran at a third of the
// speed of 2, and 2 threads pinned to one CPU at two thirds of 1
// (docs/performance.md#threads-and-cpus).
//
// Usable = the CPUs in the affinity mask, capped by the cgroup's CPU quota
// rounded up (util/cgroup.h), at least 1.
// Thread-safe; computed once per process (CPU limits rarely change while a
// server runs, and a restart picks up a change).
#pragma once

#include <optional>
#include <string>

namespace outpost::util {

struct CpuBudget {
  int online = 0;    // the machine's online CPUs
  int affinity = 0;  // CPUs in this process's affinity mask
  // The cgroup's quota in CPUs (2.5 = 250 ms per 100 ms), if one is set.
  std::optional<double> quota;
  int usable = 1;  // min(affinity, ceil(quota)), at least 1
  // "2 CPUs", or "2 CPUs (of 16 online: affinity 4, cgroup quota 1.5)".
  std::string Describe() const;
};

const CpuBudget& UsableCpus();

}  // namespace outpost::util

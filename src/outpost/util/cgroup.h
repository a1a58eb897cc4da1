// Cgroup limits on this process — what a systemd unit (CPUQuota=,
// MemoryMax=, MemoryHigh=), a container runtime (--cpus, --memory) or an
// operator's cgroup sets — read from the cgroup filesystem, so that the
// default thread count (util/cpus.h) and memory budget
// (scheduler::DetectAvailableMemory) are what the process really gets, not
// the machine's.
//
// A limit may be set on the process's own cgroup or on any parent, and the
// smallest applies: each reader walks from the process's cgroup (named in
// /proc/self/cgroup) up to the hierarchy's root. cgroup v2 (one hierarchy,
// `0::/path`, mounted at the root given) and v1 (one hierarchy per
// controller, `N:cpu,cpuacct:/path`, mounted at root/<controllers> or
// root/<controller>) are both read. Inside a container the path named may not
// exist under the mount (v1 without a cgroup namespace): the walk then finds
// the container's own limits at the mount's root.
//
// Each takes the root (normally /sys/fs/cgroup) and the text of
// /proc/self/cgroup, so tests can give a fake tree; nullopt = no limit set,
// or nothing could be read. Thread-safe (no state).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace outpost::util {

inline constexpr const char* kCgroupRoot = "/sys/fs/cgroup";

// This process's /proc/self/cgroup ("" when unreadable).
std::string ProcSelfCgroup();

// CPU quota in CPUs (1.5 = 150 ms per 100 ms): v2 cpu.max, v1
// cpu.cfs_quota_us / cpu.cfs_period_us.
std::optional<double> CgroupCpuQuota(const std::string& cgroup_root,
                                     const std::string& proc_self_cgroup);

// Memory limit in bytes: v2 the smaller of memory.max and memory.high (past
// memory.high the kernel throttles and reclaims the process hard, so a
// budget above it is not one the process can use), v1
// memory.limit_in_bytes (values from 2^62 up mean none).
std::optional<uint64_t> CgroupMemoryLimit(const std::string& cgroup_root,
                                          const std::string& proc_self_cgroup);

}  // namespace outpost::util

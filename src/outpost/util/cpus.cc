#include "outpost/util/cpus.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <thread>

#include "outpost/util/cgroup.h"

namespace outpost::util {

std::string CpuBudget::Describe() const {
  std::string s = std::to_string(usable) + (usable == 1 ? " CPU" : " CPUs");
  if (usable == online) return s;
  s += " (of " + std::to_string(online) + " online: affinity " + std::to_string(affinity);
  if (quota) {
    std::ostringstream q;
    q << *quota;
    s += ", cgroup quota " + q.str();
  }
  return s + ")";
}

const CpuBudget& UsableCpus() {
  static const CpuBudget budget = [] {
    CpuBudget b;
    b.online = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    cpu_set_t set;
    CPU_ZERO(&set);
    b.affinity = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : b.online;
    b.quota = CgroupCpuQuota(kCgroupRoot, ProcSelfCgroup());
    b.usable = std::max(1, b.affinity);
    if (b.quota) b.usable = std::min(b.usable, std::max(1, static_cast<int>(std::ceil(*b.quota))));
    return b;
  }();
  return budget;
}

}  // namespace outpost::util

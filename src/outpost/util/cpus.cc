#include "outpost/util/cpus.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

namespace outpost::util {
namespace {

std::optional<std::string> ReadSmall(const std::filesystem::path& p) {
  std::ifstream in(p);
  if (!in.is_open()) return std::nullopt;
  std::string s;
  std::getline(in, s);
  return s;
}

// A positive quota / period in CPUs from two numbers as text; nullopt for
// "max", -1, zero or anything unparsable.
std::optional<double> Ratio(const std::string& quota, const std::string& period) {
  try {
    size_t used = 0;
    const double q = std::stod(quota, &used);
    if (used != quota.size() || q <= 0) return std::nullopt;
    const double p = std::stod(period, &used);
    if (used != period.size() || p <= 0) return std::nullopt;
    return q / p;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The smallest quota along dir/rel and its parents up to dir, read by `read`.
template <typename Read>
std::optional<double> SmallestUpTo(const std::filesystem::path& dir, const std::string& rel,
                                   Read read) {
  std::optional<double> best;
  std::filesystem::path p = dir;
  const std::string trimmed = rel.empty() || rel == "/" ? "" : rel.substr(rel[0] == '/' ? 1 : 0);
  if (!trimmed.empty()) p /= trimmed;
  while (true) {
    if (const std::optional<double> q = read(p); q && (!best || *q < *best)) best = q;
    if (p == dir || !p.has_parent_path() || p.parent_path() == p) break;
    p = p.parent_path();
    if (p.native().size() < dir.native().size()) break;
  }
  return best;
}

}  // namespace

std::optional<double> CgroupCpuQuota(const std::string& cgroup_root,
                                     const std::string& proc_self_cgroup) {
  const std::filesystem::path root(cgroup_root);
  std::error_code ec;
  std::istringstream lines(proc_self_cgroup);
  std::string line;
  std::optional<double> best;
  const auto keep = [&best](std::optional<double> q) {
    if (q && (!best || *q < *best)) best = q;
  };
  while (std::getline(lines, line)) {
    // hierarchy-id:controllers:path
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    if (line.compare(0, a, "0") == 0 && controllers.empty()) {
      // cgroup v2, mounted at the root itself on a v2-only system.
      if (!std::filesystem::exists(root / "cgroup.controllers", ec)) continue;
      keep(SmallestUpTo(root, path, [](const std::filesystem::path& p) -> std::optional<double> {
        const std::optional<std::string> s = ReadSmall(p / "cpu.max");
        if (!s) return std::nullopt;
        const size_t sp = s->find(' ');
        if (sp == std::string::npos) return std::nullopt;
        return Ratio(s->substr(0, sp), s->substr(sp + 1));
      }));
      continue;
    }
    // cgroup v1: the line whose controllers include "cpu".
    std::istringstream names(controllers);
    std::string name;
    bool cpu = false;
    while (std::getline(names, name, ',')) cpu = cpu || name == "cpu";
    if (!cpu) continue;
    for (const std::string& dir_name : {controllers, std::string("cpu")}) {
      const std::filesystem::path dir = root / dir_name;
      if (!std::filesystem::is_directory(dir, ec)) continue;
      keep(SmallestUpTo(dir, path, [](const std::filesystem::path& p) -> std::optional<double> {
        const std::optional<std::string> q = ReadSmall(p / "cpu.cfs_quota_us");
        const std::optional<std::string> period = ReadSmall(p / "cpu.cfs_period_us");
        if (!q || !period) return std::nullopt;
        return Ratio(*q, *period);
      }));
      break;
    }
  }
  return best;
}

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
    std::ifstream in("/proc/self/cgroup");
    std::ostringstream text;
    text << in.rdbuf();
    b.quota = CgroupCpuQuota("/sys/fs/cgroup", text.str());
    b.usable = std::max(1, b.affinity);
    if (b.quota) b.usable = std::min(b.usable, std::max(1, static_cast<int>(std::ceil(*b.quota))));
    return b;
  }();
  return budget;
}

}  // namespace outpost::util

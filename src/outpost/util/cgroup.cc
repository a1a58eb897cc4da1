#include "outpost/util/cgroup.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <vector>

namespace outpost::util {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> ReadLine(const fs::path& p) {
  std::ifstream in(p);
  if (!in.is_open()) return std::nullopt;
  std::string s;
  std::getline(in, s);
  return s;
}

// A whole non-negative decimal number; nullopt for "max", "-1" or anything else.
std::optional<uint64_t> Number(const std::string& s) {
  if (s.empty() || s.size() > 20) return std::nullopt;
  uint64_t n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (n > (UINT64_MAX - d) / 10) return std::nullopt;
    n = n * 10 + d;
  }
  return n;
}

// One cgroup directory's limit, or nullopt when it sets none.
template <typename T>
using Reader = std::function<std::optional<T>(const fs::path&)>;

// The smallest limit `read` finds on dir/rel and its parents up to dir.
template <typename T>
std::optional<T> SmallestUpTo(const fs::path& dir, const std::string& rel, const Reader<T>& read) {
  std::optional<T> best;
  fs::path p = dir;
  const size_t skip = rel.find_first_not_of('/');
  if (skip != std::string::npos) p /= rel.substr(skip);
  while (true) {
    if (const std::optional<T> v = read(p); v && (!best || *v < *best)) best = v;
    if (p == dir || p.native().size() <= dir.native().size()) break;
    p = p.parent_path();
  }
  return best;
}

struct Line {
  bool v2 = false;
  std::vector<std::string> controllers;
  std::string joined;  // the controllers as written, "cpu,cpuacct"
  std::string path;
};

std::vector<Line> ParseProcSelfCgroup(const std::string& text) {
  std::vector<Line> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    Line l;
    l.joined = line.substr(a + 1, b - a - 1);
    l.path = line.substr(b + 1);
    l.v2 = line.compare(0, a, "0") == 0 && l.joined.empty();
    std::istringstream names(l.joined);
    std::string name;
    while (std::getline(names, name, ',')) l.controllers.push_back(name);
    out.push_back(std::move(l));
  }
  return out;
}

// The smallest limit along the process's path in the v2 hierarchy (if it is
// mounted at the root) or in the v1 hierarchy of `controller`.
template <typename T>
std::optional<T> Smallest(const std::string& cgroup_root, const std::string& proc_self_cgroup,
                          const std::string& controller, const Reader<T>& v2, const Reader<T>& v1) {
  const fs::path root(cgroup_root);
  std::error_code ec;
  std::optional<T> best;
  const auto keep = [&best](std::optional<T> v) {
    if (v && (!best || *v < *best)) best = v;
  };
  for (const Line& l : ParseProcSelfCgroup(proc_self_cgroup)) {
    if (l.v2) {
      if (fs::exists(root / "cgroup.controllers", ec)) keep(SmallestUpTo<T>(root, l.path, v2));
      continue;
    }
    bool has = false;
    for (const std::string& c : l.controllers) has = has || c == controller;
    if (!has) continue;
    for (const std::string& dir_name : {l.joined, controller}) {
      if (!fs::is_directory(root / dir_name, ec)) continue;
      keep(SmallestUpTo<T>(root / dir_name, l.path, v1));
      break;
    }
  }
  return best;
}

}  // namespace

std::string ProcSelfCgroup() {
  std::ifstream in("/proc/self/cgroup");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::optional<double> CgroupCpuQuota(const std::string& cgroup_root,
                                     const std::string& proc_self_cgroup) {
  const auto ratio = [](const std::optional<std::string>& quota,
                        const std::optional<std::string>& period) -> std::optional<double> {
    if (!quota || !period) return std::nullopt;
    const std::optional<uint64_t> q = Number(*quota);
    const std::optional<uint64_t> p = Number(*period);
    if (!q || !p || *q == 0 || *p == 0) return std::nullopt;
    return static_cast<double>(*q) / static_cast<double>(*p);
  };
  const Reader<double> v2 = [&ratio](const fs::path& p) -> std::optional<double> {
    const std::optional<std::string> s = ReadLine(p / "cpu.max");  // "max 100000", "150000 100000"
    if (!s) return std::nullopt;
    const size_t sp = s->find(' ');
    if (sp == std::string::npos) return std::nullopt;
    return ratio(s->substr(0, sp), s->substr(sp + 1));
  };
  const Reader<double> v1 = [&ratio](const fs::path& p) {
    return ratio(ReadLine(p / "cpu.cfs_quota_us"), ReadLine(p / "cpu.cfs_period_us"));
  };
  return Smallest<double>(cgroup_root, proc_self_cgroup, "cpu", v2, v1);
}

std::optional<uint64_t> CgroupMemoryLimit(const std::string& cgroup_root,
                                          const std::string& proc_self_cgroup) {
  const auto bytes = [](const std::optional<std::string>& s) -> std::optional<uint64_t> {
    if (!s) return std::nullopt;
    const std::optional<uint64_t> n = Number(*s);
    if (!n || *n >= (uint64_t{1} << 62)) return std::nullopt;  // v1's "none" is ~2^63
    return n;
  };
  const Reader<uint64_t> v2 = [&bytes](const fs::path& p) -> std::optional<uint64_t> {
    const std::optional<uint64_t> max = bytes(ReadLine(p / "memory.max"));
    const std::optional<uint64_t> high = bytes(ReadLine(p / "memory.high"));
    if (max && high) return std::min(*max, *high);
    return max ? max : high;
  };
  const Reader<uint64_t> v1 = [&bytes](const fs::path& p) {
    return bytes(ReadLine(p / "memory.limit_in_bytes"));
  };
  return Smallest<uint64_t>(cgroup_root, proc_self_cgroup, "memory", v2, v1);
}

}  // namespace outpost::util

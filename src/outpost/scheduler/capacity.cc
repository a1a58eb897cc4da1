#include "outpost/scheduler/capacity.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>

#include "outpost/util/cgroup.h"
#include "outpost/util/units.h"

namespace outpost::scheduler {

using util::FormatBytes;

uint64_t RequiredWithHeadroom(uint64_t peak_use_bytes, double headroom_fraction) {
  return static_cast<uint64_t>(
      std::llround(static_cast<double>(peak_use_bytes) * (1.0 + headroom_fraction)));
}

StatusOr<CapacityPlan> PlanCapacity(const CapacityInputs& in, int32_t requested, int32_t auto_cap) {
  CapacityPlan p;
  p.weight_bytes = in.weight_bytes;
  p.kv_bytes_per_token = in.kv_bytes_per_token;
  p.ctx_per_session = in.ctx_per_session;
  p.kv_bytes_per_session = in.kv_bytes_per_token * static_cast<uint64_t>(in.ctx_per_session);
  p.overhead_bytes = in.overhead_bytes;
  p.budget_bytes = in.memory_budget_bytes;
  p.headroom_fraction = in.headroom_fraction;
  p.usable_bytes = static_cast<uint64_t>(static_cast<double>(in.memory_budget_bytes) /
                                         (1.0 + in.headroom_fraction));
  const uint64_t fixed = p.weight_bytes + p.overhead_bytes;
  if (fixed + p.kv_bytes_per_session > p.usable_bytes) {
    return Status::ResourceExhausted(
        "not even one session fits: weights " + FormatBytes(p.weight_bytes) + " + overhead " +
        FormatBytes(p.overhead_bytes) + " + one session's KV " +
        FormatBytes(p.kv_bytes_per_session) + " = " + FormatBytes(fixed + p.kv_bytes_per_session) +
        " > usable " + FormatBytes(p.usable_bytes) + " (budget " + FormatBytes(p.budget_bytes) +
        " with " + std::to_string(static_cast<int>(std::lround(in.headroom_fraction * 100))) +
        "% headroom); lower ctx_size, use a smaller KV type or raise memory_budget");
  }
  const uint64_t per = std::max<uint64_t>(1, p.kv_bytes_per_session);
  p.max_sessions =
      static_cast<int32_t>(std::min<uint64_t>((p.usable_bytes - fixed) / per, 1 << 20));
  if (requested > 0) {
    if (requested > p.max_sessions) {
      return Status::ResourceExhausted(
          "parallel " + std::to_string(requested) + " does not fit: weights " +
          FormatBytes(p.weight_bytes) + " + overhead " + FormatBytes(p.overhead_bytes) + " + " +
          std::to_string(requested) + " x " + FormatBytes(p.kv_bytes_per_session) +
          " KV = " + FormatBytes(fixed + per * static_cast<uint64_t>(requested)) + " > usable " +
          FormatBytes(p.usable_bytes) + "; at most " + std::to_string(p.max_sessions) +
          " sessions of " + std::to_string(p.ctx_per_session) + " tokens fit");
    }
    p.sessions = requested;
  } else {
    p.sessions = std::min(p.max_sessions, auto_cap);
  }
  p.peak_bytes = fixed + p.kv_bytes_per_session * static_cast<uint64_t>(p.sessions);
  p.required_bytes = RequiredWithHeadroom(p.peak_bytes, p.headroom_fraction);
  return p;
}

std::string CapacityPlan::ToText() const {
  std::ostringstream o;
  o << "capacity plan:\n"
    << "  weights              " << FormatBytes(weight_bytes) << "\n"
    << "  KV per token         " << FormatBytes(kv_bytes_per_token) << "\n"
    << "  KV per session       " << FormatBytes(kv_bytes_per_session) << " (" << ctx_per_session
    << " tokens)\n"
    << "  overhead             " << FormatBytes(overhead_bytes) << " (compute buffers, runtime)\n"
    << "  memory budget        " << FormatBytes(budget_bytes) << ", usable "
    << FormatBytes(usable_bytes) << " after " << std::lround(headroom_fraction * 100)
    << "% headroom\n"
    << "  max sessions         " << max_sessions << "\n"
    << "  sessions (parallel)  " << sessions << "\n"
    << "  peak use             " << FormatBytes(peak_bytes) << " (needs "
    << FormatBytes(required_bytes) << " with headroom)";
  return o.str();
}

namespace {
uint64_t ReadMeminfoKb(const char* path, const std::string& key) {
  std::ifstream f(path);
  std::string k;
  uint64_t kb = 0;
  std::string unit;
  while (f >> k >> kb) {
    std::getline(f, unit);
    if (k == key) return kb;
  }
  return 0;
}
}  // namespace

uint64_t DetectAvailableMemory(std::string* source) {
  const uint64_t avail = ReadMeminfoKb("/proc/meminfo", "MemAvailable:") * 1024;
  const uint64_t self_rss = ReadMeminfoKb("/proc/self/status", "VmRSS:") * 1024;
  uint64_t v = avail + self_rss;
  const std::optional<uint64_t> cg =
      util::CgroupMemoryLimit(util::kCgroupRoot, util::ProcSelfCgroup());
  if (source != nullptr) *source = "available memory";
  if (cg && *cg > 0 && (v == 0 || *cg < v)) {
    v = *cg;
    if (source != nullptr) *source = "the cgroup's memory limit";
  }
  return v;
}

}  // namespace outpost::scheduler

// Capacity planning — how many concurrent sessions fit in memory.
//
// Gate 1 of every edge deployment: memory = weights + KV per session × PEAK
// sessions + overhead (compute buffers, runtime), plus headroom. Count the
// peak: when memory runs out requests fail, they do not slow down.
//
// Headroom is added on top of the peak use: required = use × (1 + headroom).
// With the default 20% a 10.4 GB peak needs a 12.5 GB ("12 GB class") box, and
// a budget B admits use up to B / 1.2. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "outpost/engine/kv_layout.h"
#include "outpost/util/status.h"

namespace outpost::scheduler {

// KV bytes per token: the engine's formula (engine/kv_layout.h), one for all.
using engine::KvBytesPerToken;

// Memory a workload needs including headroom: use × (1 + headroom_fraction).
uint64_t RequiredWithHeadroom(uint64_t peak_use_bytes, double headroom_fraction);

struct CapacityInputs {
  uint64_t weight_bytes = 0;
  uint64_t kv_bytes_per_token = 0;
  int32_t ctx_per_session = 0;
  uint64_t overhead_bytes = 0;       // compute buffers, logits, runtime
  uint64_t memory_budget_bytes = 0;  // configured or detected available memory
  double headroom_fraction = 0.2;
};

struct CapacityPlan {
  uint64_t weight_bytes = 0;
  uint64_t kv_bytes_per_token = 0;
  uint64_t kv_bytes_per_session = 0;
  uint64_t overhead_bytes = 0;
  uint64_t budget_bytes = 0;
  uint64_t usable_bytes = 0;  // budget / (1 + headroom)
  double headroom_fraction = 0.2;
  int32_t ctx_per_session = 0;
  int32_t max_sessions = 0;     // largest count that fits
  int32_t sessions = 0;         // what will run (requested or auto)
  uint64_t peak_bytes = 0;      // weights + overhead + KV × sessions
  uint64_t required_bytes = 0;  // peak with headroom

  // One readable block for the start-up log.
  std::string ToText() const;
};

// Plans capacity. requested_sessions: 0 = auto (max that fits, capped at
// auto_cap). Errors: ResourceExhausted with the numbers when the weights alone
// do not fit, or when an explicit request does not fit.
StatusOr<CapacityPlan> PlanCapacity(const CapacityInputs& in, int32_t requested_sessions,
                                    int32_t auto_cap);

// Memory the process may use: MemAvailable from /proc/meminfo plus this
// process's own resident set, capped by the cgroup's memory limit when one
// is set on the process's cgroup or a parent (util/cgroup.h: a systemd
// unit's MemoryMax=/MemoryHigh=, a container's --memory; v1 or v2).
// 0 when unknown. `source`, when given, is set to which of the two it is
// ("available memory", "the cgroup's memory limit"), for the log.
uint64_t DetectAvailableMemory(std::string* source = nullptr);

}  // namespace outpost::scheduler

// KV cache layout: element types and the one formula for bytes per token,
// shared by the engine (what it allocates), the scheduler's capacity plan and
// the planner. Pure.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "outpost/util/status.h"

namespace outpost::engine {

enum class KvType { kF16, kQ8_0, kQ4_0 };
const char* KvTypeName(KvType t);
StatusOr<KvType> ParseKvType(const std::string& name);
// Bytes per element of K/V (block-averaged for quantised types).
double KvBytesPerElement(KvType t);

// KV bytes one token occupies: layers × KV heads × (K dim + V dim) × element size.
// With K dim = V dim = head_dim this is the familiar layers × heads × dim × 2 × size.
inline uint64_t KvBytesPerToken(int32_t n_layers, int32_t n_kv_heads, int32_t head_dim_k,
                                int32_t head_dim_v, double bytes_per_element) {
  const double v =
      static_cast<double>(n_layers) * n_kv_heads * (head_dim_k + head_dim_v) * bytes_per_element;
  return static_cast<uint64_t>(std::llround(v));
}

}  // namespace outpost::engine

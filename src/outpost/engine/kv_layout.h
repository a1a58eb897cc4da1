// KV cache layout: element types and the one formula for bytes per token,
// shared by the engine (what it allocates), the scheduler's capacity plan and
// the planner; and how a batch over one KV stream per sequence splits into
// passes of the model. Pure.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

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

// The passes of the model one Decode() makes over a batch with
// tokens_per_seq[i] tokens of sequence i, and each pass's rows. With one KV
// stream per sequence llama.cpp splits a batch equally and sequentially:
// from the lowest sequence with tokens left, the run of consecutive ids that
// all have tokens left takes as many tokens each as the fewest of them has.
// {1, 1, 1, 1} is one pass of 4 rows; {1, 0, 1, 1} two (1, then 2); {5, 1,
// 1, 1} two (4, then 4 of sequence 0). Exact for a batch whose first token
// of each sequence comes in id order and whose further tokens follow, in id
// order (the scheduler's decode and guess rows).
std::vector<int32_t> BatchPasses(std::span<const int32_t> tokens_per_seq);

}  // namespace outpost::engine

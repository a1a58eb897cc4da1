#include "outpost/engine/kv_layout.h"

#include <algorithm>

namespace outpost::engine {

const char* KvTypeName(KvType t) {
  switch (t) {
    case KvType::kF16:
      return "f16";
    case KvType::kQ8_0:
      return "q8_0";
    case KvType::kQ4_0:
      return "q4_0";
  }
  return "?";
}

StatusOr<KvType> ParseKvType(const std::string& name) {
  if (name == "f16") return KvType::kF16;
  if (name == "q8_0") return KvType::kQ8_0;
  if (name == "q4_0") return KvType::kQ4_0;
  return Status::InvalidArgument("kv type '" + name + "' is not one of f16, q8_0, q4_0", "kv_type");
}

double KvBytesPerElement(KvType t) {
  switch (t) {
    case KvType::kF16:
      return 2.0;
    case KvType::kQ8_0:
      return 34.0 / 32.0;  // 32 int8 + one f16 scale per block
    case KvType::kQ4_0:
      return 18.0 / 32.0;  // 32 nibbles + one f16 scale per block
  }
  return 2.0;
}

std::vector<int32_t> BatchPasses(std::span<const int32_t> tokens_per_seq) {
  std::vector<int32_t> left(tokens_per_seq.begin(), tokens_per_seq.end());
  std::vector<int32_t> passes;
  size_t first = 0;
  for (;;) {
    while (first < left.size() && left[first] <= 0) ++first;
    if (first == left.size()) return passes;
    size_t end = first;
    int32_t each = left[first];
    while (end < left.size() && left[end] > 0) each = std::min(each, left[end++]);
    for (size_t i = first; i < end; ++i) left[i] -= each;
    passes.push_back(each * static_cast<int32_t>(end - first));
  }
}

}  // namespace outpost::engine

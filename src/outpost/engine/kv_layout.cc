#include "outpost/engine/kv_layout.h"

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

}  // namespace outpost::engine

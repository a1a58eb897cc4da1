#include "outpost/models/version_json.h"

#include <map>

#include "outpost/engine/model_info.h"

namespace outpost::models {

nlohmann::json VersionDetailJson(ModelStore* store, const ModelVersion& v) {
  nlohmann::json j = VersionJson(v);
  auto tensors = engine::ListTensors(store->ModelPath(v));
  if (!tensors.ok()) {
    j["tensors"] = {{"error", tensors.status().message()}};
    return j;
  }
  std::map<std::string, std::pair<uint64_t, uint64_t>> by_type;  // type: count, bytes
  for (const auto& t : *tensors) {
    auto& [count, bytes] = by_type[t.type];
    ++count;
    bytes += t.bytes;
  }
  nlohmann::json types = nlohmann::json::object();
  for (const auto& [type, cb] : by_type) types[type] = {{"count", cb.first}, {"bytes", cb.second}};
  nlohmann::json out = {{"count", tensors->size()}, {"types", types}};
  if (const engine::GgufTensor* head = engine::FindOutputHead(*tensors); head != nullptr) {
    out["head"] = {{"tensor", head->name},
                   {"type", head->type},
                   {"bytes", head->bytes},
                   {"tied", head->name == "token_embd.weight"}};
  }
  j["tensors"] = std::move(out);
  return j;
}

}  // namespace outpost::models

// A ModelVersion as the JSON that `outpost model … --json` prints and the
// admin API answers (one shape for both).
#pragma once

#include <nlohmann/json.hpp>

#include "outpost/models/model_store.h"

namespace outpost::models {

inline nlohmann::json VersionJson(const ModelVersion& v) {
  nlohmann::json j = {{"ref", v.ref()},
                      {"name", v.name},
                      {"version", v.version},
                      {"state", v.state},
                      {"source", v.source},
                      {"size", v.size},
                      {"digest", v.blob_digest},
                      {"manifest", v.manifest_digest},
                      {"architecture", v.architecture},
                      {"quantization", v.quantization},
                      {"params", v.n_params},
                      {"created", v.created_unix},
                      {"activated", v.activated_unix}};
  if (!v.shards.empty()) j["shards"] = v.shards;  // a split model: every file, in order
  if (!v.error.empty()) j["error"] = v.error;
  if (!v.signature.empty()) j["signature"] = v.signature;
  if (!v.validation.empty()) {
    j["validation"] = nlohmann::json::parse(v.validation, nullptr, false);
  }
  return j;
}

}  // namespace outpost::models

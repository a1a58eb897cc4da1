// A ModelVersion as the JSON that `outpost model … --json` prints and the
// admin API answers (one shape for both). VersionDetailJson (version_json.cc)
// is `outpost model show`'s and GET /admin/models/REF's: that, plus what the
// file's header says of its tensors.
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

// VersionJson plus "tensors": the count, the count and bytes per type, and the
// output head ("head": the tensor, its type and bytes; "tied" when the head is
// the token embeddings) — what `outpost model requantize` changes. Read from
// the GGUF's header (every shard), not its data. When the file cannot be read
// (still fetching, failed) "tensors" is {"error": why}.
nlohmann::json VersionDetailJson(ModelStore* store, const ModelVersion& v);

}  // namespace outpost::models

// The fleet's desired-state document: which model version each site or
// label group should serve, signed by the central team, verified here
// offline before anything acts on it.
//
// On the wire: a DSSE envelope (models/dsse.h) with payloadType
// kDesiredStateType, signed with a key the node trusts (fleet_trusted_keys).
// The payload, JSON:
//
//   {"generation": 7,                       // rises with every change
//    "models": [
//      {"name": "default",                  // the model name clients use
//       "source": "oci://registry.corp/models/smollm2@sha256:…",
//                                           // or https://…, or a path on the box
//       "sha256": "<64 hex>",               // the GGUF's; required unless the
//                                           // source is pinned @sha256:
//       "version": "v2",                    // store version (default: from the pin)
//       "sites": ["plant-3"],               // selector: this site (optional)
//       "labels": {"line": "a"},            // selector: all these labels (optional)
//       "signature_policy": "enforce",      // for the model file (default: the node's)
//       "canary": {"steps": [5, 25], "bake": "10m", "min_requests": 50}
//                                           // absent: activate at once
//      }]}
//
// Entries are in priority order: for each model name, the first entry whose
// selector matches the node wins (a site-specific entry above a fleet-wide
// one). A document is refused whole, naming the entry and field, when any
// part of it is wrong: unknown keys, a bad name or version, an unpinned
// source, a bad canary plan.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "outpost/models/dsse.h"
#include "outpost/models/model_lifecycle.h"
#include "outpost/util/status.h"

namespace outpost::fleet {

inline constexpr const char* kDesiredStateType = "application/vnd.outpost.desired-state.v1+json";

struct DesiredModel {
  std::string name, version;
  std::string source;
  std::string sha256;  // hex, "" when the source is pinned by manifest digest
  std::vector<std::string> sites;
  std::map<std::string, std::string> labels;
  std::string signature_policy;  // "" = the node's policy for the source
  std::optional<models::ModelLifecycle::CanaryPlan> canary;
  std::string Ref() const { return name + ":" + version; }
};

struct DesiredState {
  int64_t generation = 0;
  std::vector<DesiredModel> models;
  std::string payload;   // the signed bytes
  std::string envelope;  // the envelope as received ("" when parsed from a payload)
  std::string key_id;    // the key that signed it ("" when not verified)
};

// What a node is, for the selectors.
struct NodeIdentity {
  std::string site;
  std::map<std::string, std::string> labels;
};

// Parses a payload (no signature). Errors: InvalidArgument naming the entry
// ("models[1].sha256") and what is wrong.
StatusOr<DesiredState> ParseDesiredState(const std::string& payload);

// Verifies the envelope against `keys`, then parses its payload. Errors:
// PermissionDenied (not signed by a trusted key, another payload type),
// InvalidArgument (not JSON; as ParseDesiredState).
StatusOr<DesiredState> VerifyDesiredState(const std::string& envelope_json,
                                          const std::vector<models::TrustedKey>& keys);

// The entries that apply to `node`: per model name the first that matches.
std::vector<DesiredModel> SelectFor(const DesiredState& state, const NodeIdentity& node);

// "k=v,k=v" → labels. Errors: InvalidArgument naming `field`.
StatusOr<std::map<std::string, std::string>> ParseLabels(const std::string& text,
                                                         const std::string& field);

}  // namespace outpost::fleet

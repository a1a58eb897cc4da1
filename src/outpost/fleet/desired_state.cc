#include "outpost/fleet/desired_state.h"

#include <tuple>

#include <nlohmann/json.hpp>

#include "outpost/models/canary_plan.h"
#include "outpost/models/model_signature.h"
#include "outpost/models/model_store.h"
#include "outpost/util/json_text.h"
#include "outpost/util/status_macros.h"

namespace outpost::fleet {
namespace {

using nlohmann::json;

Status Bad(const std::string& field, const std::string& why) {
  return Status::InvalidArgument("desired state: " + field + " " + why, field);
}

bool IsHex64(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// The manifest digest an oci:// source is pinned to ("" when by tag).
std::string OciPin(const std::string& source) {
  const size_t at = source.rfind("@sha256:");
  if (at == std::string::npos) return "";
  const std::string hex = source.substr(at + 8);
  return IsHex64(hex) ? hex : "";
}

Status CheckKeys(const json& obj, const std::string& where, std::initializer_list<const char*> ok) {
  for (const auto& [k, _] : obj.items()) {
    bool known = false;
    for (const char* a : ok) known = known || k == a;
    if (!known) {
      std::string names;
      for (const char* a : ok) names += (names.empty() ? "" : ", ") + std::string(a);
      return Bad(where + (where.empty() ? "" : ".") + k,
                 "is not a known key (allowed: " + names + ")");
    }
  }
  return Status::Ok();
}

StatusOr<DesiredModel> ParseEntry(const json& e, const std::string& at) {
  if (!e.is_object()) return Bad(at, "must be an object");
  if (Status st = CheckKeys(
          e, at,
          {"name", "version", "source", "sha256", "sites", "labels", "signature_policy", "canary"});
      !st.ok()) {
    return st;
  }
  DesiredModel m;
  auto str = [&](const char* k, std::string* out, bool required) -> Status {
    if (!e.contains(k)) {
      return required ? Bad(at + "." + k, "is required") : Status::Ok();
    }
    if (!e[k].is_string()) return Bad(at + "." + k, "must be a string");
    *out = e[k].get<std::string>();
    return Status::Ok();
  };
  const std::tuple<const char*, std::string*, bool> fields[] = {
      {"name", &m.name, true},
      {"version", &m.version, false},
      {"source", &m.source, true},
      {"sha256", &m.sha256, false},
      {"signature_policy", &m.signature_policy, false}};
  for (const auto& [k, out, req] : fields) {
    if (Status st = str(k, out, req); !st.ok()) return st;
  }
  const bool oci = m.source.rfind("oci://", 0) == 0;
  if (!oci && m.source.rfind("https://", 0) != 0 && m.source.rfind("http://", 0) != 0 &&
      m.source.rfind("file://", 0) != 0 && m.source.rfind('/', 0) != 0) {
    return Bad(at + ".source",
               "must be an oci://, https:// or http:// reference or an absolute path, got '" +
                   m.source + "'");
  }
  if (m.sha256.rfind("sha256:", 0) == 0) m.sha256 = m.sha256.substr(7);
  if (!m.sha256.empty() && !IsHex64(m.sha256)) {
    return Bad(at + ".sha256", "must be 64 lowercase hex digits");
  }
  const std::string pin = oci ? OciPin(m.source) : "";
  if (m.sha256.empty() && pin.empty()) {
    return Bad(at + ".sha256",
               "is required: the source must be pinned (a sha256, or oci://…@sha256:<digest>)");
  }
  if (m.version.empty()) m.version = "sha256-" + (m.sha256.empty() ? pin : m.sha256).substr(0, 12);
  std::string name, version;
  if (Status st = models::ParseModelRef(m.name + ":" + m.version, &name, &version); !st.ok()) {
    const bool version_bad = st.message().rfind("model version", 0) == 0;
    return Bad(at + (version_bad ? ".version" : ".name"), "is wrong: " + st.message());
  }
  if (!m.signature_policy.empty() && !models::ParseSignaturePolicy(m.signature_policy).ok()) {
    return Bad(at + ".signature_policy",
               "must be off, warn or enforce, got '" + m.signature_policy + "'");
  }
  if (e.contains("sites")) {
    if (!e["sites"].is_array()) return Bad(at + ".sites", "must be an array of site names");
    for (const auto& s : e["sites"]) {
      if (!s.is_string() || s.get<std::string>().empty()) {
        return Bad(at + ".sites", "must hold non-empty strings");
      }
      m.sites.push_back(s.get<std::string>());
    }
  }
  if (e.contains("labels")) {
    if (!e["labels"].is_object()) return Bad(at + ".labels", "must be an object of strings");
    for (const auto& [k, v] : e["labels"].items()) {
      if (!v.is_string()) return Bad(at + ".labels." + k, "must be a string");
      m.labels[k] = v.get<std::string>();
    }
  }
  if (e.contains("canary") && !e["canary"].is_null()) {
    const json& c = e["canary"];
    if (!c.is_object()) return Bad(at + ".canary", "must be an object");
    if (Status st = CheckKeys(c, at + ".canary",
                              {"steps", "bake", "min_requests", "max_ttft_ratio",
                               "max_error_increase", "shadow", "min_decode_ratio"});
        !st.ok()) {
      return st;
    }
    auto plan = models::CanaryPlanFromJson(c);
    if (!plan.ok()) {
      return Bad(at + ".canary." + plan.status().param(), "is wrong: " + plan.status().message());
    }
    if (Status st = models::CheckCanaryPlan(*plan); !st.ok()) {
      return Bad(at + ".canary." + st.param(), "is wrong: " + st.message());
    }
    m.canary = *plan;
  }
  return m;
}

}  // namespace

StatusOr<DesiredState> ParseDesiredState(const std::string& payload) {
  OUTPOST_RETURN_IF_ERROR(util::CheckJsonDepth(payload, "desired state: the payload", "payload"));
  const json doc = json::parse(payload, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Status::InvalidArgument("desired state: the payload is not a JSON object", "payload");
  }
  if (Status st = CheckKeys(doc, "", {"generation", "models"}); !st.ok()) return st;
  DesiredState s;
  s.payload = payload;
  if (!doc.contains("generation") || !doc["generation"].is_number_integer() ||
      doc["generation"].get<int64_t>() < 1) {
    return Bad("generation", "must be a whole number of at least 1");
  }
  s.generation = doc["generation"].get<int64_t>();
  if (!doc.contains("models") || !doc["models"].is_array()) {
    return Bad("models", "must be an array of entries");
  }
  for (size_t i = 0; i < doc["models"].size(); ++i) {
    auto m = ParseEntry(doc["models"][i], "models[" + std::to_string(i) + "]");
    if (!m.ok()) return m.status();
    s.models.push_back(std::move(m).value());
  }
  return s;
}

StatusOr<DesiredState> VerifyDesiredState(const std::string& envelope_json,
                                          const std::vector<models::TrustedKey>& keys) {
  OUTPOST_RETURN_IF_ERROR(
      util::CheckJsonDepth(envelope_json, "desired state: the envelope", "document"));
  const json env = json::parse(envelope_json, nullptr, false);
  if (env.is_discarded() || !env.is_object()) {
    return Status::InvalidArgument("desired state: not a JSON DSSE envelope", "document");
  }
  auto verified = models::VerifyDsse(env, kDesiredStateType, keys);
  if (!verified.ok()) {
    return Status(verified.status().code(), "desired state: " + verified.status().message(),
                  "signature");
  }
  auto s = ParseDesiredState(verified->payload);
  if (!s.ok()) return s.status();
  s->key_id = verified->key_id;
  s->envelope = envelope_json;
  return s;
}

std::vector<DesiredModel> SelectFor(const DesiredState& state, const NodeIdentity& node) {
  std::vector<DesiredModel> out;
  for (const auto& m : state.models) {
    bool taken = false;
    for (const auto& o : out) taken = taken || o.name == m.name;
    if (taken) continue;
    bool match = m.sites.empty();
    for (const auto& s : m.sites) match = match || s == node.site;
    for (const auto& [k, v] : m.labels) {
      auto it = node.labels.find(k);
      match = match && it != node.labels.end() && it->second == v;
    }
    if (match) out.push_back(m);
  }
  return out;
}

StatusOr<std::map<std::string, std::string>> ParseLabels(const std::string& text,
                                                         const std::string& field) {
  std::map<std::string, std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(start, comma - start);
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::InvalidArgument(
          "'" + field + "': '" + item + "' must be KEY=VALUE (labels are KEY=VALUE,KEY=VALUE)",
          field);
    }
    out[item.substr(0, eq)] = item.substr(eq + 1);
    start = comma + 1;
  }
  return out;
}

}  // namespace outpost::fleet

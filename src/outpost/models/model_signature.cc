#include "outpost/models/model_signature.h"

#include <nlohmann/json.hpp>

#include "outpost/models/store_layout.h"
#include "outpost/util/json_text.h"
#include "outpost/util/sha256.h"
#include "outpost/util/status_macros.h"

namespace outpost::models {
namespace {

using nlohmann::json;

constexpr const char* kStatementType = "https://in-toto.io/Statement/v1";
constexpr const char* kPredicateType = "https://model_signing/signature/v1.0";
constexpr const char* kPayloadType = "application/vnd.in-toto+json";

Status Denied(const std::string& why) {
  return Status(StatusCode::kPermissionDenied, "signature: " + why, "signature");
}

}  // namespace

StatusOr<SignatureCheck> VerifyModelSignature(const std::string& signature_json,
                                              const std::string& file_digest,
                                              const std::vector<TrustedKey>& keys) {
  if (Status st = util::CheckJsonDepth(signature_json, "the document"); !st.ok()) {
    return Denied(st.message());
  }
  const json doc = json::parse(signature_json, nullptr, false);
  if (!doc.is_object()) return Denied("not JSON: neither a DSSE envelope nor a Sigstore bundle");
  SignatureCheck check;
  json env = doc;
  if (doc.contains("dsseEnvelope")) {
    const std::string media = doc.value("mediaType", "");
    if (media.rfind("application/vnd.dev.sigstore.bundle", 0) != 0) {
      return Denied("a bundle of media type '" + media + "', not a Sigstore bundle");
    }
    env = doc["dsseEnvelope"];
    check.format = "model-signing";
  } else {
    check.format = "dsse";
  }
  DsseVerified verified;
  OUTPOST_ASSIGN_OR_RETURN(verified, VerifyDsse(env, kPayloadType, keys));
  check.key_id = verified.key_id;
  const std::string& payload = verified.payload;
  // Signed: now what it vouches for.
  if (Status st = util::CheckJsonDepth(payload, "the signed payload"); !st.ok()) {
    return Denied(st.message());
  }
  const json st = json::parse(payload, nullptr, false);
  if (!st.is_object() || st.value("_type", "") != kStatementType) {
    return Denied("the signed payload is not an in-toto statement v1");
  }
  if (st.value("predicateType", "") != kPredicateType) {
    return Denied("predicateType '" + st.value("predicateType", "") + "', not " + kPredicateType);
  }
  const std::string hex =
      file_digest.rfind("sha256:", 0) == 0 ? file_digest.substr(7) : file_digest;
  if (st.contains("predicate") && st["predicate"].is_object() &&
      st["predicate"].contains("resources") && st["predicate"]["resources"].is_array()) {
    for (const auto& r : st["predicate"]["resources"]) {
      if (r.is_object() && r.value("algorithm", "") == "sha256" && r.value("digest", "") == hex) {
        check.name = r.value("name", "");
        return check;
      }
    }
  }
  return Denied("signed by key " + check.key_id +
                ", but for other bytes: no resource is sha256:" + hex.substr(0, 12) + "…");
}

StatusOr<std::string> SignModel(const std::string& private_key_pem_path, const std::string& name,
                                const std::string& file_digest) {
  return SignModel(private_key_pem_path, {{name, file_digest}});
}

StatusOr<std::string> SignModel(const std::string& private_key_pem_path,
                                const std::vector<std::pair<std::string, std::string>>& files) {
  // The subject digest, as model signing computes it: SHA-256 over the
  // concatenated raw resource digests, in order.
  std::string raw;
  json resources = json::array();
  for (const auto& [name, digest] : files) {
    const std::string hex = digest.rfind("sha256:", 0) == 0 ? digest.substr(7) : digest;
    if (!layout::IsHex64(hex)) {
      return Status::InvalidArgument("'" + digest + "' is not a sha256 digest", "digest");
    }
    for (size_t i = 0; i < 32; ++i) {
      raw.push_back(static_cast<char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16)));
    }
    resources.push_back({{"name", name}, {"algorithm", "sha256"}, {"digest", hex}});
  }
  const std::string subject = files.size() == 1 ? files[0].first : "model";
  const json statement = {
      {"_type", kStatementType},
      {"subject",
       json::array({{{"name", subject}, {"digest", {{"sha256", util::Sha256Hex(raw)}}}}})},
      {"predicateType", kPredicateType},
      {"predicate",
       {{"resources", resources},
        {"serialization",
         {{"method", "files"}, {"hash_type", "sha256"}, {"allow_symlinks", false}}}}}};
  return SignDsse(private_key_pem_path, kPayloadType, statement.dump());
}

StatusOr<SignaturePolicy> ParseSignaturePolicy(const std::string& text) {
  if (text == "off") return SignaturePolicy::kOff;
  if (text == "warn") return SignaturePolicy::kWarn;
  if (text == "enforce") return SignaturePolicy::kEnforce;
  return Status::InvalidArgument("signature policy '" + text + "' must be off, warn or enforce",
                                 "signature_policy");
}

SignaturePolicy SignaturePolicies::For(const std::string& source) const {
  SignaturePolicy p = fallback;
  size_t best = 0;
  for (const auto& [prefix, policy] : by_prefix) {
    if (prefix.size() > best && source.rfind(prefix, 0) == 0) {
      best = prefix.size();
      p = policy;
    }
  }
  return p;
}

StatusOr<SignaturePolicies> ParseSignaturePolicies(const std::string& text) {
  SignaturePolicies out;
  if (text.find('=') == std::string::npos) {
    auto p = ParseSignaturePolicy(text);
    if (!p.ok()) return p.status();
    out.fallback = *p;
    return out;
  }
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string entry = text.substr(start, comma - start);
    const size_t eq = entry.rfind('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::InvalidArgument(
          "signature_policy entry '" + entry + "' must be PREFIX=off|warn|enforce (or *=…)",
          "signature_policy");
    }
    auto p = ParseSignaturePolicy(entry.substr(eq + 1));
    if (!p.ok()) {
      return Status::InvalidArgument(
          "signature_policy entry '" + entry + "': " + p.status().message(), "signature_policy");
    }
    const std::string prefix = entry.substr(0, eq);
    if (prefix == "*") {
      out.fallback = *p;
    } else {
      out.by_prefix.emplace_back(prefix, *p);
    }
    start = comma + 1;
  }
  return out;
}

const char* SignaturePolicyName(SignaturePolicy p) {
  switch (p) {
    case SignaturePolicy::kOff:
      return "off";
    case SignaturePolicy::kWarn:
      return "warn";
    case SignaturePolicy::kEnforce:
      return "enforce";
  }
  return "?";
}

Status ApplySignaturePolicy(SignaturePolicy policy, const std::string& signature_json,
                            const std::vector<std::string>& file_digests,
                            const std::vector<TrustedKey>& keys, std::string* note) {
  if (policy == SignaturePolicy::kOff) {
    *note = "not checked (policy off)";
    return Status::Ok();
  }
  const std::string mode = SignaturePolicyName(policy);
  if (signature_json.empty()) {
    *note = "unsigned (policy " + mode + ")";
    if (policy == SignaturePolicy::kEnforce) {
      return Denied(
          "none found, and the policy is enforce (give one with --signature, or publish "
          "it beside the model)");
    }
    return Status::Ok();
  }
  StatusOr<SignatureCheck> check = Status::InvalidArgument("no file to check", "signature");
  for (size_t i = 0; i < file_digests.size(); ++i) {
    check = VerifyModelSignature(signature_json, file_digests[i], keys);
    if (!check.ok() && file_digests.size() > 1) {
      check = Status(check.status().code(),
                     "shard " + std::to_string(i + 1) + " of " +
                         std::to_string(file_digests.size()) + ": " + check.status().message(),
                     check.status().param());
    }
    if (!check.ok()) break;
  }
  if (!check.ok()) {
    *note = "bad: " + check.status().message() + " (policy " + mode + ")";
    return policy == SignaturePolicy::kEnforce ? check.status() : Status::Ok();
  }
  *note = "verified: " + check->format + ", key " + check->key_id;
  return Status::Ok();
}

}  // namespace outpost::models

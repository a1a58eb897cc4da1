#include "outpost/models/model_signature.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <fstream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "outpost/models/store_layout.h"
#include "outpost/util/base64.h"

namespace outpost::models {
namespace {

using nlohmann::json;

constexpr const char* kStatementType = "https://in-toto.io/Statement/v1";
constexpr const char* kPredicateType = "https://model_signing/signature/v1.0";
constexpr const char* kPayloadType = "application/vnd.in-toto+json";

struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;

std::string Pae(const std::string& type, const std::string& body) {
  return "DSSEv1 " + std::to_string(type.size()) + " " + type + " " + std::to_string(body.size()) +
         " " + body;
}

Pkey PublicKeyFromPem(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  EVP_PKEY* k = PEM_read_bio_PUBKEY(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return Pkey(k);
}

std::string KeyId(EVP_PKEY* k) {
  unsigned char* der = nullptr;
  const int n = i2d_PUBKEY(k, &der);
  if (n <= 0) return "";
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(der, static_cast<size_t>(n), md, &len, EVP_sha256(), nullptr);
  OPENSSL_free(der);
  return layout::Hex(md, 8);
}

// Ed25519 signs the message itself; ECDSA a SHA-256 of it (DER signature).
bool VerifyWith(EVP_PKEY* k, const std::string& message, const std::string& sig) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  const EVP_MD* md = EVP_PKEY_get_base_id(k) == EVP_PKEY_ED25519 ? nullptr : EVP_sha256();
  bool ok =
      EVP_DigestVerifyInit(ctx, nullptr, md, nullptr, k) == 1 &&
      EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                       reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1;
  EVP_MD_CTX_free(ctx);
  return ok;
}

Status Denied(const std::string& why) {
  return Status(StatusCode::kPermissionDenied, "signature: " + why, "signature");
}

}  // namespace

StatusOr<std::vector<TrustedKey>> LoadTrustedKeys(const std::vector<std::string>& paths) {
  std::vector<TrustedKey> keys;
  for (const auto& path : paths) {
    std::ifstream in(path);
    if (!in)
      return Status::InvalidArgument("trusted key " + path + " cannot be read", "trusted_keys");
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string pem = ss.str();
    if (pem.find("PRIVATE KEY") != std::string::npos) {
      return Status::InvalidArgument(
          "trusted key " + path + " is a private key; give the public half (openssl pkey -pubout)",
          "trusted_keys");
    }
    Pkey k = PublicKeyFromPem(pem);
    if (!k) {
      return Status::InvalidArgument("trusted key " + path + " is not a PEM public key",
                                     "trusted_keys");
    }
    const int type = EVP_PKEY_get_base_id(k.get());
    if (type != EVP_PKEY_ED25519 && type != EVP_PKEY_EC) {
      return Status::InvalidArgument(
          "trusted key " + path + " is neither Ed25519 nor ECDSA (P-256/384/521)", "trusted_keys");
    }
    keys.push_back({KeyId(k.get()), pem, path});
  }
  return keys;
}

StatusOr<SignatureCheck> VerifyModelSignature(const std::string& signature_json,
                                              const std::string& file_digest,
                                              const std::vector<TrustedKey>& keys) {
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
  if (!env.is_object() || !env.contains("payload") || !env["payload"].is_string() ||
      !env.contains("signatures") || !env["signatures"].is_array() || env["signatures"].empty()) {
    return Denied("the envelope needs payload, payloadType and signatures");
  }
  const std::string type = env.value("payloadType", "");
  if (type != kPayloadType) return Denied("payloadType '" + type + "', not " + kPayloadType);
  std::string payload;
  if (!util::Base64Decode(env["payload"].get<std::string>(), &payload)) {
    return Denied("the payload is not base64");
  }
  if (keys.empty()) return Denied("no trusted keys are configured to check it against");
  const std::string message = Pae(type, payload);
  for (const auto& s : env["signatures"]) {
    std::string sig;
    if (!s.is_object() || !util::Base64Decode(s.value("sig", ""), &sig)) continue;
    for (const auto& key : keys) {
      Pkey k = PublicKeyFromPem(key.pem);
      if (k && VerifyWith(k.get(), message, sig)) {
        check.key_id = key.id;
        break;
      }
    }
    if (!check.key_id.empty()) break;
  }
  if (check.key_id.empty()) {
    std::string ids;
    for (const auto& k : keys) ids += (ids.empty() ? "" : ", ") + k.id;
    return Denied("no trusted key (" + ids + ") verifies it");
  }
  // Signed: now what it vouches for.
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
  FILE* f = std::fopen(private_key_pem_path.c_str(), "r");
  if (f == nullptr) {
    return Status::InvalidArgument("signing key " + private_key_pem_path + " cannot be read",
                                   "key");
  }
  Pkey k(PEM_read_PrivateKey(f, nullptr, nullptr, nullptr));
  std::fclose(f);
  if (!k || EVP_PKEY_get_base_id(k.get()) != EVP_PKEY_ED25519) {
    return Status::InvalidArgument("signing key " + private_key_pem_path +
                                       " is not an Ed25519 private key in PEM (openssl genpkey "
                                       "-algorithm ed25519)",
                                   "key");
  }
  const std::string hex =
      file_digest.rfind("sha256:", 0) == 0 ? file_digest.substr(7) : file_digest;
  // The subject digest, as model signing computes it: SHA-256 over the
  // concatenated raw resource digests (one here).
  unsigned char raw[32];
  for (size_t i = 0; i < 32 && hex.size() == 64; ++i) {
    raw[i] = static_cast<unsigned char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(raw, sizeof raw, md, &len, EVP_sha256(), nullptr);
  const json statement = {
      {"_type", kStatementType},
      {"subject", json::array({{{"name", name}, {"digest", {{"sha256", layout::Hex(md, len)}}}}})},
      {"predicateType", kPredicateType},
      {"predicate",
       {{"resources", json::array({{{"name", name}, {"algorithm", "sha256"}, {"digest", hex}}})},
        {"serialization",
         {{"method", "files"}, {"hash_type", "sha256"}, {"allow_symlinks", false}}}}}};
  const std::string payload = statement.dump();
  const std::string message = Pae(kPayloadType, payload);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  size_t sig_len = 0;
  std::string sig;
  bool ok =
      EVP_DigestSignInit(ctx, nullptr, nullptr, nullptr, k.get()) == 1 &&
      EVP_DigestSign(ctx, nullptr, &sig_len, reinterpret_cast<const unsigned char*>(message.data()),
                     message.size()) == 1;
  if (ok) {
    sig.resize(sig_len);
    ok =
        EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &sig_len,
                       reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1;
  }
  EVP_MD_CTX_free(ctx);
  if (!ok) return Status::Internal("signing with " + private_key_pem_path + " failed");
  sig.resize(sig_len);
  unsigned char* der = nullptr;
  const int n = i2d_PUBKEY(k.get(), &der);
  std::string keyid;
  if (n > 0) {
    EVP_Digest(der, static_cast<size_t>(n), md, &len, EVP_sha256(), nullptr);
    OPENSSL_free(der);
    keyid = layout::Hex(md, 8);
  }
  const json envelope = {
      {"payloadType", kPayloadType},
      {"payload", util::Base64Encode(payload)},
      {"signatures", json::array({{{"keyid", keyid}, {"sig", util::Base64Encode(sig)}}})}};
  return envelope.dump(2) + "\n";
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
                            const std::string& file_digest, const std::vector<TrustedKey>& keys,
                            std::string* note) {
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
  auto check = VerifyModelSignature(signature_json, file_digest, keys);
  if (!check.ok()) {
    *note = "bad: " + check.status().message() + " (policy " + mode + ")";
    return policy == SignaturePolicy::kEnforce ? check.status() : Status::Ok();
  }
  *note = "verified: " + check->format + ", key " + check->key_id;
  return Status::Ok();
}

}  // namespace outpost::models

#include "outpost/models/dsse.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "outpost/models/store_layout.h"
#include "outpost/util/base64.h"
#include "outpost/util/sha256.h"

namespace outpost::models {
namespace {

using nlohmann::json;

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
  const std::string hex =
      util::Sha256Hex(std::string_view(reinterpret_cast<const char*>(der), static_cast<size_t>(n)));
  OPENSSL_free(der);
  return hex.substr(0, 16);  // the first 8 bytes
}

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

StatusOr<DsseVerified> VerifyDsse(const json& env, const std::string& payload_type,
                                  const std::vector<TrustedKey>& keys) {
  if (!env.is_object() || !env.contains("payload") || !env["payload"].is_string() ||
      !env.contains("signatures") || !env["signatures"].is_array() || env["signatures"].empty()) {
    return Denied("the envelope needs payload, payloadType and signatures");
  }
  const std::string type =
      env.contains("payloadType") && env["payloadType"].is_string() ? env["payloadType"] : "";
  if (type != payload_type) return Denied("payloadType '" + type + "', not " + payload_type);
  DsseVerified out;
  if (!util::Base64Decode(env["payload"].get<std::string>(), &out.payload)) {
    return Denied("the payload is not base64");
  }
  if (keys.empty()) return Denied("no trusted keys are configured to check it against");
  const std::string message = Pae(type, out.payload);
  for (const auto& s : env["signatures"]) {
    std::string sig;
    if (!s.is_object() || !s.contains("sig") || !s["sig"].is_string() ||
        !util::Base64Decode(s["sig"].get<std::string>(), &sig)) {
      continue;
    }
    for (const auto& key : keys) {
      Pkey k = PublicKeyFromPem(key.pem);
      if (k && VerifyWith(k.get(), message, sig)) {
        out.key_id = key.id;
        return out;
      }
    }
  }
  std::string ids;
  for (const auto& k : keys) ids += (ids.empty() ? "" : ", ") + k.id;
  return Denied("no trusted key (" + ids + ") verifies it");
}

StatusOr<std::string> SignDsse(const std::string& private_key_pem_path,
                               const std::string& payload_type, const std::string& payload) {
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
  const std::string message = Pae(payload_type, payload);
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
  const json envelope = {
      {"payloadType", payload_type},
      {"payload", util::Base64Encode(payload)},
      {"signatures", json::array({{{"keyid", KeyId(k.get())}, {"sig", util::Base64Encode(sig)}}})}};
  return envelope.dump(2) + "\n";
}

}  // namespace outpost::models

#include "outpost/audit/audit_crypto.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "outpost/util/base64.h"
#include "outpost/util/sha256.h"

namespace outpost::audit {
namespace {

bool FromHex(const std::string& hex, unsigned char* out, size_t n) {
  if (hex.size() != 2 * n) return false;
  for (size_t i = 0; i < n; ++i) {
    auto nib = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      return -1;
    };
    const int hi = nib(hex[2 * i]), lo = nib(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<unsigned char>(hi * 16 + lo);
  }
  return true;
}

std::string PublicPem(EVP_PKEY* pkey) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PUBKEY(bio, pkey);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<size_t>(n));
  BIO_free(bio);
  return pem;
}

}  // namespace

const std::string& GenesisHash() {
  static const std::string* const zeros = new std::string(64, '0');
  return *zeros;
}

std::string ChainHash(const std::string& prev_hex, std::string_view record) {
  unsigned char prev[32] = {};
  if (!FromHex(prev_hex, prev, 32)) std::fill(prev, prev + 32, 0);
  util::Sha256Stream hash;
  hash.Update(prev, 32);
  hash.Update(record);
  return hash.Finish();
}

StatusOr<std::unique_ptr<SigningKey>> SigningKey::LoadOrCreate(const std::string& path) {
  EVP_PKEY* pkey = nullptr;
  if (FILE* f = std::fopen(path.c_str(), "r")) {
    pkey = PEM_read_PrivateKey(f, nullptr, nullptr, nullptr);
    std::fclose(f);
    if (pkey == nullptr || EVP_PKEY_get_base_id(pkey) != EVP_PKEY_ED25519) {
      EVP_PKEY_free(pkey);
      return Status::Unavailable("audit signing key " + path + ": not an Ed25519 PEM private key");
    }
  } else {
    pkey = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
    if (pkey == nullptr) return Status::Unavailable("audit signing key: Ed25519 keygen failed");
    const mode_t old = umask(077);
    FILE* out = std::fopen(path.c_str(), "w");
    umask(old);
    if (out == nullptr || !PEM_write_PrivateKey(out, pkey, nullptr, nullptr, 0, nullptr, nullptr)) {
      if (out != nullptr) std::fclose(out);
      EVP_PKEY_free(pkey);
      return Status::Unavailable("audit signing key " + path + ": cannot write it");
    }
    std::fclose(out);
  }
  std::string pub = PublicPem(pkey);
  std::ofstream(path + ".pub") << pub;
  return std::unique_ptr<SigningKey>(new SigningKey(pkey, std::move(pub)));
}

SigningKey::SigningKey(void* pkey, std::string public_pem)
    : pkey_(pkey),
      public_pem_(std::move(public_pem)),
      key_id_(util::Sha256Hex(public_pem_).substr(0, 16)) {}

SigningKey::~SigningKey() {
  EVP_PKEY_free(static_cast<EVP_PKEY*>(pkey_));
}

std::string SigningKey::Sign(std::string_view message) const {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  unsigned char sig[64];
  size_t len = sizeof sig;
  std::string out;
  if (EVP_DigestSignInit(ctx, nullptr, nullptr, nullptr, static_cast<EVP_PKEY*>(pkey_)) == 1 &&
      EVP_DigestSign(ctx, sig, &len, reinterpret_cast<const unsigned char*>(message.data()),
                     message.size()) == 1) {
    out = util::Base64Encode(std::string_view(reinterpret_cast<const char*>(sig), len));
  }
  EVP_MD_CTX_free(ctx);
  return out;
}

bool VerifySignature(const std::string& public_pem, std::string_view message,
                     const std::string& signature_b64) {
  std::string sig;
  if (!util::Base64Decode(signature_b64, &sig)) return false;
  BIO* bio = BIO_new_mem_buf(public_pem.data(), static_cast<int>(public_pem.size()));
  EVP_PKEY* pkey = PEM_read_bio_PUBKEY(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (pkey == nullptr) return false;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  const bool ok =
      EVP_DigestVerifyInit(ctx, nullptr, nullptr, nullptr, pkey) == 1 &&
      EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                       reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1;
  EVP_MD_CTX_free(ctx);
  EVP_PKEY_free(pkey);
  return ok;
}

}  // namespace outpost::audit

#include "outpost/util/sha256.h"

#include <openssl/evp.h>

namespace outpost::util {
namespace {

std::string Hex(const unsigned char* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    out += d[p[i] >> 4];
    out += d[p[i] & 15];
  }
  return out;
}

}  // namespace

std::string Sha256Hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(data.data(), data.size(), md, &n, EVP_sha256(), nullptr);
  return Hex(md, n);
}

std::string Sha256Digest(std::string_view data) {
  return "sha256:" + Sha256Hex(data);
}

Sha256Stream::Sha256Stream() : ctx_(EVP_MD_CTX_new()) {
  EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr);
}

Sha256Stream::~Sha256Stream() {
  EVP_MD_CTX_free(ctx_);
}

void Sha256Stream::Update(const void* data, size_t n) {
  EVP_DigestUpdate(ctx_, data, n);
}

std::string Sha256Stream::Finish() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx_, md, &n);
  EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr);
  return Hex(md, n);
}

}  // namespace outpost::util

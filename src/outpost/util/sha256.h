// SHA-256 through OpenSSL's EVP: of a buffer at once, or streamed. Digests
// come as 64 lowercase hex digits, or in the OCI form "sha256:<hex>" that
// model blobs, manifests and fleet documents are named by.
//
// Pure functions are thread-safe; a Sha256Stream belongs to one thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

struct evp_md_ctx_st;

namespace outpost::util {

// 64 lowercase hex digits.
std::string Sha256Hex(std::string_view data);
// "sha256:" + Sha256Hex(data).
std::string Sha256Digest(std::string_view data);

class Sha256Stream {
 public:
  Sha256Stream();
  ~Sha256Stream();
  Sha256Stream(const Sha256Stream&) = delete;
  Sha256Stream& operator=(const Sha256Stream&) = delete;

  void Update(const void* data, size_t n);
  void Update(std::string_view data) { Update(data.data(), data.size()); }
  // The digest of everything updated since construction or the last
  // Finish(), as 64 hex digits; the stream starts again empty.
  std::string Finish();

 private:
  evp_md_ctx_st* ctx_;
};

}  // namespace outpost::util

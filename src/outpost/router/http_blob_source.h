// HttpBlobSource — models::BlobSource over HTTP(S) with cpp-httplib, as the
// router's other outbound calls: Range and If-Range for a resume, redirects
// followed (registries and CDNs redirect blob downloads; the credentials go
// only to the first host, as curl does), a connect timeout
// and a read timeout that doubles as stall detection. TLS checks the
// server's certificate against the system's CAs or `ca_file`; an optional
// bearer token. A 401 or 403 is Unauthenticated (a registry's token may
// have expired: its caller asks for a new one). Thread-safe; a fresh
// connection per Get.
#pragma once

#include <cstdint>
#include <string>

#include "outpost/models/blob_source.h"

namespace outpost::router {

struct BlobSourceOptions {
  std::string ca_file;        // "" = the system's CAs
  std::string bearer_token;   // "" = none
  std::string authorization;  // a whole Authorization header value; wins over bearer_token
  int64_t connect_timeout_ms = 10'000;
  int64_t stall_timeout_ms = 30'000;  // no byte for this long: Unavailable, the pull retries
};

class HttpBlobSource final : public models::BlobSource {
 public:
  explicit HttpBlobSource(BlobSourceOptions options) : options_(std::move(options)) {}
  Status Get(const std::string& url, uint64_t offset, const std::string& validator,
             const std::function<bool(const Head&)>& on_head,
             const std::function<bool(const char* data, size_t n)>& on_data) override;

 private:
  const BlobSourceOptions options_;
};

}  // namespace outpost::router

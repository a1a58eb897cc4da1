// HttpUplinkTransport — the telemetry uplink's POSTs over HTTP or HTTPS
// (cpp-httplib, as the router's other TLS calls), with the centre's bearer
// token and CA file, bounded by connect and total timeouts, the body
// gzip-compressed (a summary's ~17 KB of OTLP JSON goes as ~2 KB). A fresh
// connection per call: the uplink sends a few records a minute, and after an
// outage a pooled connection would only be a dead one.
//
// Thread-safety: Post may be called from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "outpost/telemetry/uplink.h"

namespace outpost::router {

struct UplinkTransportOptions {
  std::string bearer_token;  // "" = none
  std::string tls_ca_file;   // "" = the system's CAs
  bool tls_verify = true;
  int64_t connect_timeout_ms = 5000;
  int64_t timeout_ms = 30000;  // read and write
  bool gzip = true;            // Content-Encoding: gzip (OTLP receivers accept it)
};

// RFC 1952 gzip of `data` (zlib, default level).
std::string Gzip(const std::string& data);

class HttpUplinkTransport final : public telemetry::UplinkTransport {
 public:
  explicit HttpUplinkTransport(UplinkTransportOptions options) : options_(std::move(options)) {}
  Response Post(const std::string& url, const std::string& body,
                const std::vector<std::pair<std::string, std::string>>& headers) override;

 private:
  const UplinkTransportOptions options_;
};

}  // namespace outpost::router

#include "outpost/router/uplink_transport.h"

#include <httplib.h>

namespace outpost::router {

telemetry::UplinkTransport::Response HttpUplinkTransport::Post(
    const std::string& url, const std::string& body,
    const std::vector<std::pair<std::string, std::string>>& headers) {
  Response out;
  // Split "scheme://host:port" from the path.
  const size_t scheme_end = url.find("://");
  const size_t path_start =
      scheme_end == std::string::npos ? std::string::npos : url.find('/', scheme_end + 3);
  const std::string base = path_start == std::string::npos ? url : url.substr(0, path_start);
  const std::string path = path_start == std::string::npos ? "/" : url.substr(path_start);
  httplib::Client cli(base);
  if (!cli.is_valid()) {
    out.error = "bad uplink URL " + url;
    return out;
  }
  cli.set_connection_timeout(std::chrono::milliseconds(options_.connect_timeout_ms));
  cli.set_read_timeout(std::chrono::milliseconds(options_.timeout_ms));
  cli.set_write_timeout(std::chrono::milliseconds(options_.timeout_ms));
  cli.set_keep_alive(false);
  if (!options_.bearer_token.empty()) cli.set_bearer_token_auth(options_.bearer_token);
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
  cli.enable_server_certificate_verification(options_.tls_verify);
  if (!options_.tls_ca_file.empty()) cli.set_ca_cert_path(options_.tls_ca_file);
#endif
  httplib::Headers h;
  for (const auto& [k, v] : headers) h.emplace(k, v);
  auto res = cli.Post(path, h, body, "application/json");
  if (!res) {
    out.error = "POST " + url + " failed: " + httplib::to_string(res.error());
    return out;
  }
  out.status = res->status;
  out.body = std::move(res->body);
  out.retry_after = res->get_header_value("Retry-After");
  return out;
}

}  // namespace outpost::router

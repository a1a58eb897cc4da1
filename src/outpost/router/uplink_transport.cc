#include "outpost/router/uplink_transport.h"

#include <httplib.h>
#include <zlib.h>

namespace outpost::router {

std::string Gzip(const std::string& data) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return {};
  }
  std::string out(deflateBound(&z, data.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return rc == Z_STREAM_END ? out : std::string();
}

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
  std::string packed = options_.gzip ? Gzip(body) : std::string();
  if (!packed.empty()) h.emplace("Content-Encoding", "gzip");
  const std::string& wire = packed.empty() ? body : packed;
  out.wire_bytes = wire.size();
  auto res = cli.Post(path, h, wire, "application/json");
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

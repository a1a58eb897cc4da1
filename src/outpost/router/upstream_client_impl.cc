#include "outpost/router/upstream_client_impl.h"

#include <httplib.h>

#include "outpost/router/http1_client.h"
#include "outpost/router/proxy.h"

namespace outpost::router {

UpstreamClientImpl::UpstreamClientImpl(const util::Clock* clock)
    : connections_(64, std::chrono::milliseconds(2000), clock),
      sockets_(64, std::chrono::milliseconds(2000), clock) {}

Status UpstreamClientImpl::Post(const UpstreamConfig& cfg, const std::string& path,
                                std::string body, UpstreamReply* reply) {
  if (IsPlainHttp(cfg.base_url)) return Http1Post(cfg, &sockets_, path, body, reply);
  return FetchUpstream(cfg, &connections_, path, std::move(body), reply);
}

std::unique_ptr<UpstreamCall> UpstreamClientImpl::PostStreaming(const UpstreamConfig& cfg,
                                                                const std::string& path,
                                                                std::string body) {
  return std::make_unique<UpstreamCall>(cfg, &connections_, path, std::move(body));
}

Status UpstreamClientImpl::Get(const UpstreamConfig& cfg, const std::string& path,
                               std::chrono::milliseconds timeout, UpstreamReply* reply) {
  // A short-lived client: probes are rare, and a probe must see a fresh
  // connection fail when the upstream is gone.
  httplib::Client cli(cfg.base_url);
  cli.set_connection_timeout(timeout);
  cli.set_read_timeout(timeout);
  cli.set_write_timeout(timeout);
  cli.set_tcp_nodelay(true);
  if (!cfg.api_key.empty()) cli.set_bearer_token_auth(cfg.api_key);
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
  cli.enable_server_certificate_verification(cfg.tls_verify);
  if (!cfg.tls_ca_file.empty()) cli.set_ca_cert_path(cfg.tls_ca_file);
#endif
  *reply = UpstreamReply();
  auto res = cli.Get(cfg.path_prefix + path);
  if (!res) {
    return Status::Unavailable("upstream " + cfg.name + " (" + cfg.base_url +
                               ") failed: " + httplib::to_string(res.error()));
  }
  reply->status = res->status;
  reply->content_type = res->get_header_value("Content-Type");
  reply->body = std::move(res->body);
  return Status::Ok();
}

uint64_t UpstreamClientImpl::connections_opened() const {
  return connections_.connections_opened() + sockets_.connections_opened();
}

}  // namespace outpost::router

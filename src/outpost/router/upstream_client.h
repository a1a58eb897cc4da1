// UpstreamClient — how Outpost talks HTTP to its upstreams (peers, central),
// one interface for the relay, the health probe, and next the telemetry
// uplink. upstream_client_impl.h puts two transports behind it: Outpost's lean
// HTTP/1.1 client for plain-HTTP whole-body calls (the router's hot path) and
// cpp-httplib with a keep-alive pool for TLS, streams and GETs. Every call is
// bounded by the upstream's connect, first-byte and total timeouts, and carries
// its API key and the X-Outpost-Forwarded header. Implementations are
// thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "outpost/router/routing_config.h"
#include "outpost/util/status.h"

namespace outpost::router {

// Set on every request Outpost forwards: the receiving Outpost answers it
// itself and never forwards it again (two peers would otherwise ping-pong).
inline constexpr const char* kForwardedHeader = "X-Outpost-Forwarded";

// A whole upstream response.
struct UpstreamReply {
  int status = 0;  // 0: no response head arrived
  std::string content_type;
  std::string body;
};

class UpstreamCall;  // proxy.h: a POST whose response streams

class UpstreamClient {
 public:
  virtual ~UpstreamClient() = default;

  // POST {base_url}{path_prefix}{path} with a JSON body; the whole response
  // on the caller's thread. Errors: Unavailable naming the upstream and what
  // went wrong (connect failed, no response within the first-byte timeout,
  // total timeout, connection lost); reply->status != 0 then says the head had
  // arrived before the failure.
  virtual Status Post(const UpstreamConfig& cfg, const std::string& path, std::string body,
                      UpstreamReply* reply) = 0;

  // The same POST, its response read on a thread of its own so that the
  // caller can wait for the head and relay the body as it comes.
  virtual std::unique_ptr<UpstreamCall> PostStreaming(const UpstreamConfig& cfg,
                                                      const std::string& path,
                                                      std::string body) = 0;

  // GET {base_url}{path_prefix}{path} within `timeout` (connect and read).
  // Errors: Unavailable naming the upstream.
  virtual Status Get(const UpstreamConfig& cfg, const std::string& path,
                     std::chrono::milliseconds timeout, UpstreamReply* reply) = 0;

  // TCP connections opened so far (far below the calls made = pooling works).
  virtual uint64_t connections_opened() const = 0;
};

}  // namespace outpost::router

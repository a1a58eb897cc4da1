// UpstreamClientImpl — the UpstreamClient with its two transports and their
// pools: plain-HTTP whole-body POSTs through Http1Post on a SocketPool (one
// send, blocking recv; see http1_client.h for why), everything else (https://,
// streams, GETs) through cpp-httplib on a ConnectionPool. Thread-safe.
#pragma once

#include "outpost/router/connection_pool.h"
#include "outpost/router/socket_pool.h"
#include "outpost/router/upstream_client.h"
#include "outpost/util/clock.h"

namespace outpost::router {

class UpstreamClientImpl final : public UpstreamClient {
 public:
  // `clock` (idle ages in the pools) must outlive the client.
  explicit UpstreamClientImpl(const util::Clock* clock = &util::RealClock());

  Status Post(const UpstreamConfig& cfg, const std::string& path, std::string body,
              UpstreamReply* reply) override;
  std::unique_ptr<UpstreamCall> PostStreaming(const UpstreamConfig& cfg, const std::string& path,
                                              std::string body) override;
  Status Get(const UpstreamConfig& cfg, const std::string& path, std::chrono::milliseconds timeout,
             UpstreamReply* reply) override;
  uint64_t connections_opened() const override;

 private:
  ConnectionPool connections_;  // cpp-httplib: TLS, streams, GETs
  SocketPool sockets_;          // Http1Post: plain-HTTP whole bodies
};

}  // namespace outpost::router

// Http1Client — a small HTTP/1.1 client for the router's hot path: one POST
// and its whole response, on pooled plain-TCP keep-alive connections.
//
// Why not cpp-httplib here: per relayed request it costs two sends (head,
// body), a poll() before every recv(), and header maps with case-folded
// compares; on a 2-core box that CPU shows up directly as added latency (see
// docs/performance.md). This client writes head and body with one send(),
// blocks in recv() with SO_RCVTIMEO instead of polling, and parses only the
// headers it needs (status, Content-Type, Content-Length, Transfer-Encoding,
// Connection). It speaks plain TCP only: https:// upstreams and streamed
// responses use cpp-httplib (proxy.h).
//
// Timeouts: connect_timeout for the TCP connect, first_byte_timeout for any
// silence while reading (the first byte included), total_timeout for the
// whole exchange. A pooled connection the peer closed while idle fails before
// any response byte; the request is then sent once more on a new connection.
// Part of UpstreamClientImpl (upstream_client_impl.h); thread-safe.
#pragma once

#include <string>

#include "outpost/router/routing_config.h"
#include "outpost/router/socket_pool.h"
#include "outpost/util/status.h"

namespace outpost::router {

struct UpstreamReply;

// True when `base_url` is http:// (this client's domain).
bool IsPlainHttp(const std::string& base_url);

// POST {base_url}{path_prefix}{path} with a JSON body; fills *reply (status, content type,
// body). Errors as FetchUpstream's (proxy.h): Unavailable naming the upstream
// and the cause; reply->status != 0 says the head had arrived.
Status Http1Post(const UpstreamConfig& cfg, SocketPool* pool, const std::string& path,
                 const std::string& body, UpstreamReply* reply);

}  // namespace outpost::router

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
// Internally synchronised.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "outpost/router/routing_config.h"
#include "outpost/util/clock.h"
#include "outpost/util/status.h"

namespace outpost::router {

struct UpstreamReply;

// The parts of a response head the relay needs.
struct ResponseHead {
  int status = 0;
  std::string content_type;
  int64_t content_length = -1;  // -1: not given
  bool chunked = false;
  bool keep_alive = true;  // HTTP/1.1 default; false on "Connection: close" or HTTP/1.0
};

// Parses "HTTP/1.1 200 OK\r\nName: value\r\n...\r\n" (without the final
// empty line). Errors: InvalidArgument naming what is malformed.
Status ParseResponseHead(std::string_view head, ResponseHead* out);

// Incremental decoder of a chunked body. Feed() consumes what it can and
// appends the payload to *out; done() once the last chunk and trailers ended.
class ChunkedDecoder {
 public:
  // Errors: InvalidArgument on a malformed chunk size or framing.
  Status Feed(std::string_view data, std::string* out);
  bool done() const { return state_ == State::kDone; }

 private:
  enum class State { kSize, kData, kDataEnd, kTrailer, kDone };
  State state_ = State::kSize;
  std::string line_;  // partial size or trailer line
  uint64_t remaining_ = 0;
};

// Idle keep-alive sockets per upstream (by name), reused LIFO; dropped after
// `max_idle` or when the peer closed them.
class SocketPool {
 public:
  // `clock` (idle ages) must outlive the pool.
  explicit SocketPool(size_t max_idle_per_upstream = 64,
                      std::chrono::milliseconds max_idle = std::chrono::milliseconds(2000),
                      const util::Clock* clock = &util::RealClock());
  ~SocketPool();  // closes the idle sockets
  SocketPool(const SocketPool&) = delete;
  SocketPool& operator=(const SocketPool&) = delete;

  int TakeIdle(const std::string& key);  // a live idle socket, or -1
  void PutIdle(const std::string& key, int fd);
  uint64_t connections_opened() const { return opened_; }
  void CountOpened() { ++opened_; }

 private:
  struct Idle {
    int fd;
    util::Clock::TimePoint since;
  };
  const size_t max_idle_per_upstream_;
  const std::chrono::milliseconds max_idle_;
  const util::Clock* const clock_;
  std::mutex mu_;
  std::map<std::string, std::vector<Idle>> idle_;
  std::atomic<uint64_t> opened_{0};
};

// An idle HTTP/1.1 connection has nothing to read: a readable socket means
// the peer closed it (EOF) or sent something unsolicited — unusable either way.
bool IdleSocketAlive(int fd);

// True when `base_url` is http:// (this client's domain).
bool IsPlainHttp(const std::string& base_url);

// POST {base_url}{path_prefix}{path} with a JSON body; fills *reply (status, content type,
// body). Errors as FetchUpstream's (proxy.h): Unavailable naming the upstream
// and the cause; reply->status != 0 says the head had arrived.
Status Http1Post(const UpstreamConfig& cfg, SocketPool* pool, const std::string& path,
                 const std::string& body, UpstreamReply* reply);

}  // namespace outpost::router

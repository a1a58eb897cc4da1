// The cpp-httplib transport of UpstreamClientImpl (upstream_client_impl.h):
// whole-body POSTs over TLS (FetchUpstream) and streamed answers (UpstreamCall).
//
// UpstreamCall — one request forwarded to an upstream, streamed back without
// buffering. The HTTP exchange runs on its own thread and hands the response
// head and body chunks over a queue, so the caller can (a) wait for the head
// with the first-byte timeout and retry elsewhere if nothing came, and (b)
// relay chunks to its client as they arrive. Destroying the call cancels the
// upstream request. Connections come from a ConnectionPool and go back to it
// after a clean exchange; a pooled connection that turns out broken before
// any response byte (the server closed it while idle) is retried once on a
// fresh connection — that is not a retry of the request against the
// upstream's will, the request never arrived. Internally synchronised.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "outpost/router/connection_pool.h"
#include "outpost/router/response_sink.h"
#include "outpost/router/routing_config.h"
#include "outpost/router/upstream_client.h"
#include "outpost/util/status.h"

namespace outpost::router {

// POST {base_url}{path_prefix}{path} with `body` on the caller's thread, on a pooled
// connection, bounded by the upstream's connect, first-byte and total
// timeouts; fills *reply. Errors: Unavailable naming the upstream and what
// went wrong (connect failed, no response within the first-byte timeout,
// total timeout, connection lost); reply->status != 0 then says the response
// head had arrived before the failure. Used for non-streaming requests: no
// thread, no queue.
Status FetchUpstream(const UpstreamConfig& cfg, ConnectionPool* pool, const std::string& path,
                     std::string body, UpstreamReply* reply);

class UpstreamCall {
 public:
  // Starts POST {base_url}{path_prefix}{path} with `body` (JSON) on a connection from
  // `pool`, which must outlive the call.
  UpstreamCall(const UpstreamConfig& cfg, ConnectionPool* pool, const std::string& path,
               std::string body);
  ~UpstreamCall();
  UpstreamCall(const UpstreamCall&) = delete;
  UpstreamCall& operator=(const UpstreamCall&) = delete;

  // Waits up to the first-byte timeout for the response status. Errors:
  // Unavailable (connect failed, timed out, connection closed) naming the upstream.
  StatusOr<int> WaitHead();
  const std::string& content_type() const { return content_type_; }

  // The rest of the body, whole: blocks until it ended. Errors: Unavailable
  // (connection lost, total timeout).
  StatusOr<std::string> ReadAll();

  // Called on the call's own thread for each body chunk as it arrives (those
  // received before StreamTo first, in order); returning false cancels the
  // upstream request. `on_end` follows exactly once, with a non-OK Status when
  // the body ended abnormally (connection lost, total timeout). The callbacks
  // must not block and must stay valid while the call lives. Call once,
  // after WaitHead() succeeded, instead of ReadAll().
  using ChunkFn = std::function<bool(std::string)>;
  using EndFn = std::function<void(Status)>;
  void StreamTo(ChunkFn on_chunk, EndFn on_end);

  void Cancel() { cancelled_ = true; }

 private:
  void Run(std::string path, std::string body);
  void DeliverLocked();  // REQUIRES: mu_; hands queued chunks (and the end) to the stream

  const UpstreamConfig cfg_;
  ConnectionPool* const pool_;
  const std::chrono::steady_clock::time_point deadline_;
  std::atomic<bool> cancelled_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int status_ = 0;  // 0 until the head arrived
  std::string content_type_;
  std::deque<std::string> chunks_;
  bool finished_ = false;
  bool end_delivered_ = false;
  Status error_;
  ChunkFn on_chunk_;  // set by StreamTo
  EndFn on_end_;
  std::thread thread_;
};

}  // namespace outpost::router

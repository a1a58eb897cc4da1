// HttpSink — a router::ResponseSink that hands one call's answer from the
// engine or relay thread to the HTTP worker that writes it.
//
// Producers (the dispatcher, the engine thread, a relay thread) append and
// notify; the worker blocks in WaitStart()/Take() without timeouts, because
// every answer ends with a terminal call (OnDone, OnRelayEnd or OnError). A
// client that goes away is seen by Cancelled(), which also asks the HTTP
// front whether the connection is gone, so the engine frees a non-streaming
// request's session at its next decode step just as a streaming one's.
// Internally synchronised.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "outpost/router/response_sink.h"
#include "outpost/util/thread_annotations.h"

namespace outpost::api {

class HttpSink final : public router::ResponseSink {
 public:
  // client_gone: true once the client has hung up (HttpRequest::client_gone);
  // called from the engine and relay threads.
  explicit HttpSink(std::function<bool()> client_gone);

  // --- Producers (router::ResponseSink) ---
  void OnRoute(const router::RouteReport& route) override;
  void OnHeader(const std::string& name, const std::string& value) override;
  void OnLocalStart(const router::LocalAnswerMeta& meta) override;
  void OnText(int choice, std::string text) override;
  void OnLogprobs(int choice, std::vector<scheduler::TokenInfo> tokens) override;
  void OnDone(scheduler::GenerationResult result) override;
  void OnRelayHead(int http_status, const std::string& content_type) override;
  void OnRelayBody(std::string chunk) override;
  void OnRelayEnd(Status error) override;
  void OnError(Status error) override;
  bool Cancelled() override;

  // --- Consumer (the HTTP worker) ---
  enum class Answer { kError, kLocal, kRelay };
  // Blocks until the answer's shape is known: an error (including a local
  // request that failed before its first token, e.g. expired in the queue), a
  // relay head, or a local answer's first output.
  Answer WaitStart();
  // A relay: blocks until there are bytes or the end; returns the bytes and
  // sets *ended once nothing more follows.
  std::string Take(bool* ended);
  // A local answer: the same for text, in the order it came, per choice, with
  // the tokens behind it when logprobs were asked for.
  struct Piece {
    int choice = 0;
    std::string text;
    std::vector<scheduler::TokenInfo> logprobs;
  };
  std::vector<Piece> TakePieces(bool* ended);
  // The client is gone or the response is written: stop the work at its next
  // step.
  void Cancel();

  // Valid after WaitStart() (and, for result()/relay_error(), once ended).
  const std::optional<router::RouteReport>& route() const { return route_; }
  const std::map<std::string, std::string>& headers() const { return headers_; }
  const router::LocalAnswerMeta& meta() const { return meta_; }
  const Status& error() const { return error_; }
  int relay_status() const { return relay_status_; }
  const std::string& relay_content_type() const { return relay_content_type_; }
  const scheduler::GenerationResult& result() const { return result_; }
  const Status& relay_error() const { return relay_error_; }

 private:
  enum class State { kWaiting, kLocal, kRelay, kError };
  void Append(std::string data, bool end);

  std::mutex mu_;
  std::condition_variable cv_;
  State state_ OUTPOST_GUARDED_BY(mu_) = State::kWaiting;
  std::string pending_ OUTPOST_GUARDED_BY(mu_);                // relay bytes not yet taken
  std::vector<Piece> pending_pieces_ OUTPOST_GUARDED_BY(mu_);  // local output not yet taken
  bool ended_ OUTPOST_GUARDED_BY(mu_) = false;
  bool started_ OUTPOST_GUARDED_BY(mu_) = false;  // a local answer produced output

  // Written before the consumer reads them (under mu_, published by cv_).
  std::optional<router::RouteReport> route_;
  std::map<std::string, std::string> headers_;
  router::LocalAnswerMeta meta_;
  Status error_;
  int relay_status_ = 0;
  std::string relay_content_type_;
  scheduler::GenerationResult result_;
  Status relay_error_;

  const std::function<bool()> client_gone_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace outpost::api

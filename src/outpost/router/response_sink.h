// ResponseSink — where the dispatcher pushes one call's answer as it happens.
//
// Implemented by api/ (HTTP: JSON or SSE), by tests and `outpost bench`, and
// later by the batch writer (JSONL). The dispatcher calls, in order:
//
//   OnRoute(route)                      once when routing is configured, before
//                                       any answer (never without a routing file)
//   then one of
//     OnLocalStart(meta), OnText(...)*, OnDone(result)        answered here
//     OnRelayHead(status, type), OnRelayBody(...)*, OnRelayEnd(error)   upstream
//     OnError(status)                   refused or failed before any answer
//
// A confidence cascade calls OnLocalStart first (while the local answer is
// collected), then OnRoute, then either the local OnText/OnDone or the
// upstream's relay. OnHeader may come any time before the answer.
//
// OnText/OnDone come from the engine thread and OnRelayBody/OnRelayEnd from a
// relay thread: they must not block (buffer and wake the consumer). The
// others come from the dispatching thread. Cancelled() may be asked from any
// thread at any time; true stops the work at its next step (a decode step, an
// upstream chunk) and frees what it holds.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "outpost/scheduler/request.h"
#include "outpost/util/status.h"

namespace outpost::router {

// The route taken, as it is reported (X-Outpost-Route, metrics).
struct RouteReport {
  std::string route;   // "local", "peer:box-b", "central:hq", "reject"
  std::string reason;  // RouteReason::ToString()
};

// What a local answer needs for its response body.
struct LocalAnswerMeta {
  std::string model;               // the served model's id
  std::string system_fingerprint;  // model file + build
  // Reads the answer's text back (tool calls, a thinking model's reasoning);
  // null when the answer is plain text.
  std::shared_ptr<const engine::AnswerParser> answer_parser;
  std::string version;  // the store's version of the model ("" when served from a file)
};

class ResponseSink : public scheduler::GenerationSink {
 public:
  virtual void OnRoute(const RouteReport& route) = 0;
  // A diagnostic header (cascade: X-Outpost-Local-Mean-Logprob). Before the answer.
  virtual void OnHeader(const std::string& name, const std::string& value) = 0;
  virtual void OnLocalStart(const LocalAnswerMeta& meta) = 0;
  // OnText and OnDone: see scheduler::GenerationSink.
  virtual void OnRelayHead(int http_status, const std::string& content_type) = 0;
  virtual void OnRelayBody(std::string chunk) = 0;
  // The upstream body ended; non-OK when it ended abnormally (connection lost,
  // timeout, not valid JSON).
  virtual void OnRelayEnd(Status error) = 0;
  virtual void OnError(Status error) = 0;
};

// A decorator's base: passes every call to `inner` unchanged. A sink that
// watches an answer (the audit record, content capture) overrides the calls
// it needs and calls these to pass them on.
class ForwardingSink : public ResponseSink {
 public:
  explicit ForwardingSink(std::shared_ptr<ResponseSink> inner) : inner_(std::move(inner)) {}
  void OnRoute(const RouteReport& route) override { inner_->OnRoute(route); }
  void OnHeader(const std::string& name, const std::string& value) override {
    inner_->OnHeader(name, value);
  }
  void OnLocalStart(const LocalAnswerMeta& meta) override { inner_->OnLocalStart(meta); }
  void OnText(int choice, std::string text) override { inner_->OnText(choice, std::move(text)); }
  void OnLogprobs(int choice, std::vector<scheduler::TokenInfo> tokens) override {
    inner_->OnLogprobs(choice, std::move(tokens));
  }
  void OnDone(scheduler::GenerationResult result) override { inner_->OnDone(std::move(result)); }
  void OnRelayHead(int http_status, const std::string& content_type) override {
    inner_->OnRelayHead(http_status, content_type);
  }
  void OnRelayBody(std::string chunk) override { inner_->OnRelayBody(std::move(chunk)); }
  void OnRelayEnd(Status error) override { inner_->OnRelayEnd(std::move(error)); }
  void OnError(Status error) override { inner_->OnError(std::move(error)); }
  bool Cancelled() override { return inner_->Cancelled(); }

 protected:
  const std::shared_ptr<ResponseSink> inner_;
};

}  // namespace outpost::router

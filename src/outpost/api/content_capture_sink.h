// ContentCaptureSink — the one way prompt and answer text leaves the box
// through telemetry, for a tenant whose routing file entry says
// `telemetry_content: true`. It wraps the HTTP sink and passes every call
// through; it keeps the answer's text per choice (a local answer from OnText,
// a relayed one read back from the upstream's JSON or SSE body) and, when the
// answer ends, emits one OpenTelemetry GenAI event,
// `gen_ai.client.inference.operation.details` (severity DEBUG, as the
// conventions ask), whose attributes carry `gen_ai.input.messages`,
// `gen_ai.system_instructions` and `gen_ai.output.messages` in the
// conventions' JSON shape, beside model, response id, finish reasons, token
// usage, tenant and route. Each side is cut at kMaxContentBytes (on a UTF-8
// boundary); `outpost.content_truncated` then says so.
//
// The caller decides whether to build one: never for restricted data (the
// tenant's class or X-Data-Class), never without an uplink.
//
// Thread-safety: as router::ResponseSink; the event is emitted once.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "outpost/router/completion_call.h"
#include "outpost/router/response_sink.h"
#include "outpost/telemetry/summary.h"

namespace outpost::api {

// Text kept per side (input, output) of one request.
inline constexpr size_t kMaxContentBytes = 32 * 1024;

struct ContentCaptureInfo {
  std::string request_id;
  std::string operation;  // "chat" | "text_completion" (gen_ai.operation.name)
  std::string tenant;
  std::string model;  // as requested
};

// The request's messages in the GenAI conventions' shape: {"input": the
// non-system messages as [{"role", "parts": [{"type": "text", "content"}, …]}],
// "system": the system messages' parts ([] when none)}. A completion's prompt
// is one user message. Text beyond `budget` bytes in all is cut; *truncated
// is then set.
struct CapturedInput {
  std::string input_json;
  std::string system_json;  // "" when the request has no system message
  bool truncated = false;
};
CapturedInput CaptureInput(const router::CompletionRequest& request, size_t budget);

// The text of every choice in a relayed answer: a chat or completion JSON
// body, or an SSE stream of chunks. Unreadable parts are skipped.
std::map<int, std::string> RelayedText(const std::string& body);

class ContentCaptureSink final : public router::ForwardingSink {
 public:
  using Emit = std::function<void(telemetry::UplinkEvent)>;
  // `input` is the request's CaptureInput(); `now_ms` stamps the event.
  ContentCaptureSink(std::shared_ptr<router::ResponseSink> inner, Emit emit,
                     ContentCaptureInfo info, CapturedInput input, int64_t now_ms);
  ~ContentCaptureSink() override;  // emits if no end came (cancelled before any)

  void OnRoute(const router::RouteReport& route) override;
  void OnLocalStart(const router::LocalAnswerMeta& meta) override;
  void OnText(int choice, std::string text) override;
  void OnDone(scheduler::GenerationResult result) override;
  void OnRelayBody(std::string chunk) override;
  void OnRelayEnd(Status error) override;
  void OnError(Status error) override;

 private:
  // Builds and emits the event. `finish` per choice ("" = unknown).
  void Send(const std::map<int, std::string>& finish, const std::string& error, int prompt_tokens,
            int completion_tokens);

  const Emit emit_;
  const ContentCaptureInfo info_;
  const CapturedInput input_;
  const int64_t time_ms_;
  std::mutex mu_;
  std::string route_ = "local";
  std::string served_model_;
  std::map<int, std::string> text_;  // per choice, local answers
  size_t text_bytes_ = 0;
  bool text_cut_ = false;
  std::string relay_body_;  // relayed answers, up to a bound
  std::atomic<bool> sent_{false};
};

}  // namespace outpost::api

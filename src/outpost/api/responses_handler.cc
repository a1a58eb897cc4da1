// HttpServer::HandleResponses — POST /v1/responses, OpenAI's Responses API:
// the body becomes the chat call it means (responses_request.h), dispatched
// like any completion (call_dispatch.cc: headers, audit, routing; an
// upstream gets the body as it came, at its /v1/responses), and a local
// answer is written as a Response object or its event stream
// (responses_response.h). Responses are not stored.
#include <climits>
#include <memory>

#include "outpost/api/errors.h"
#include "outpost/api/http_server.h"
#include "outpost/api/http_sink.h"
#include "outpost/api/responses_request.h"
#include "outpost/api/responses_response.h"
#include "outpost/api/tool_answer.h"

namespace outpost::api {
namespace {

using scheduler::FinishReason;

struct ResponseStream {
  std::shared_ptr<HttpSink> sink;
  std::unique_ptr<ResponseEvents> events;
  std::unique_ptr<ToolCallStream> tools;  // when the request has tools
  bool started = false;
  bool finished = false;
};

}  // namespace

void HttpServer::HandleResponses(const HttpRequest& req, HttpResponse& res) {
  const std::string path = router::EndpointPath(router::Endpoint::kResponses);
  auto fail = [&](const Status& st) { SendError(res, st); };
  if (!serving_->ready()) {
    return fail(Status::Unavailable("the model is still loading").WithRetryAfter(1));
  }
  auto parsed = ParseResponsesRequest(req.body);
  if (!parsed.ok()) return fail(parsed.status());
  router::CompletionCall call;
  call.request = std::move(parsed->chat);
  if (Status st = ReadCallHeaders(req, &call); !st.ok()) return fail(st);
  call.id = NewId("resp_", *random_);
  ResponseInfo info;
  info.id = call.id;
  info.created_at = clock_->UnixSeconds();
  info.service_tier = scheduler::ServiceTierName(call.priority);
  info.echo = std::move(parsed->echo);
  const bool stream = call.request.stream;
  const bool tools = call.request.tools.active();
  const bool logprobs = call.request.top_logprobs >= 0;

  const std::shared_ptr<HttpSink> sink = DispatchCall(std::move(call), req, res, ForResponses);
  if (sink == nullptr) return;  // an error, or a relayed answer: written
  info.model = sink->meta().model;
  const auto& parser = sink->meta().tool_parser;

  if (!stream) {
    Choice answer;
    answer.has_logprobs = logprobs;
    for (bool ended = false; !ended;) {
      for (auto& p : sink->TakePieces(&ended)) {
        if (p.choice != 0) continue;
        answer.text += p.text;
        for (auto& t : p.logprobs) answer.logprobs.push_back(std::move(t));
      }
    }
    sink->Cancel();
    const scheduler::GenerationResult& r = sink->result();
    if (r.finish == FinishReason::kError) return fail(ForResponses(r.error));
    answer.finish = r.finish;
    if (tools && parser) ApplyToolAnswer(&answer, *parser, *random_);
    info.completed_at = clock_->UnixSeconds();
    res.set_content(ResponseBody(info, answer, r.usage, *random_), "application/json");
    return;
  }

  auto st = std::make_shared<ResponseStream>();
  st->sink = sink;
  st->events = std::make_unique<ResponseEvents>(std::move(info), random_);
  if (tools && parser) st->tools = std::make_unique<ToolCallStream>(parser, random_);
  const ApiStats stats = stats_;
  const util::Clock* clock = clock_;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_stream(
      "text/event-stream",
      [st, stats, path, clock](ChunkWriter& out) {
        if (st->finished) return false;
        std::string events;
        if (!st->started) {
          events = st->events->Start();
          st->started = true;
        }
        bool ended = false;
        for (auto& p : st->sink->TakePieces(&ended)) {
          if (p.choice != 0) continue;
          Choice delta;
          if (st->tools) {
            delta = st->tools->Feed(p.text);
          } else {
            delta.text = std::move(p.text);
            delta.logprobs = std::move(p.logprobs);
          }
          events += st->events->Delta(delta);
        }
        if (!ended) return events.empty() || out.Write(events);
        st->finished = true;
        const scheduler::GenerationResult& r = st->sink->result();
        if (r.finish == FinishReason::kError) {
          // Headers are gone: the failure is the stream's last event.
          events += st->events->Fail(r.error);
          stats.requests.With({path, std::to_string(HttpStatusFor(r.error.code()))}).Add();
          out.Write(events);
          return false;
        }
        if (st->tools) events += st->events->Delta(st->tools->Finish());
        events += st->events->Finish(r.finish, r.usage, clock->UnixSeconds());
        stats.requests.With({path, "200"}).Add();
        out.Write(events);
        return false;
      },
      [st](bool) { st->sink->Cancel(); });
}

}  // namespace outpost::api

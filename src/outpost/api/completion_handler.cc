// HttpServer::HandleCompletion — POST /v1/chat/completions and /v1/completions:
// parse and validate into a router::CompletionCall, dispatch it
// (call_dispatch.cc: headers, audit, relays), and write a local answer as
// JSON or an SSE stream of chunks. Routing, failover, the local scheduler and
// the cascade all live behind the dispatcher; this file only speaks HTTP.
#include <spdlog/spdlog.h>

#include <climits>
#include <memory>

#include "outpost/api/errors.h"
#include "outpost/api/http_server.h"
#include "outpost/api/http_sink.h"
#include "outpost/api/openai_request.h"
#include "outpost/api/openai_response.h"
#include "outpost/api/parsed_answer.h"
#include "outpost/api/sse.h"

namespace outpost::api {
namespace {

using scheduler::FinishReason;

// What one streamed answer needs across content-provider calls.
struct Stream {
  std::shared_ptr<HttpSink> sink;
  ResponseMeta meta;
  bool chat = true;
  bool include_usage = false;
  bool logprobs = false;
  std::vector<AnswerStream> parsed;  // per choice, when the answer is parsed (tools, thinking)
  int n = 1;                         // choices
  std::vector<int64_t> text_offset;  // completions: bytes of output written so far, per choice
  bool role_sent = false;
  bool finished = false;
};

// The scheduler calls the prompt "prompt"; a chat request's prompt is its messages.
Status ForEndpoint(Status st, Endpoint endpoint) {
  if (endpoint == Endpoint::kChat && st.param() == "prompt") return st.WithParam("messages");
  return st;
}

}  // namespace

void HttpServer::HandleCompletion(Endpoint endpoint, const HttpRequest& req, HttpResponse& res) {
  const bool chat = endpoint == Endpoint::kChat;
  const std::string path = router::EndpointPath(endpoint);
  auto fail = [&](const Status& st) { SendError(res, st); };
  if (!serving_->ready()) {
    return fail(Status::Unavailable("the model is still loading").WithRetryAfter(1));
  }

  router::CompletionCall call;
  // Token ids are checked against the vocabulary once the model is known.
  auto parsed = ParseRequest(endpoint, req.body, INT32_MAX);
  if (!parsed.ok()) return fail(parsed.status());
  call.request = std::move(parsed).value();
  if (Status st = ReadCallHeaders(req, &call); !st.ok()) return fail(st);
  const char* service_tier = scheduler::ServiceTierName(call.priority);
  call.id = NewId(chat ? "chatcmpl-" : "cmpl-", *random_);
  if (!call.request.batch_prompts.empty()) return HandlePromptBatch(std::move(call), req, res);
  const bool stream = call.request.stream;
  const bool include_usage = call.request.include_usage;
  const std::string echo = call.request.echo ? call.request.prompt : std::string();
  const bool logprobs = call.request.top_logprobs >= 0;
  const int n = call.request.n;
  const std::string request_id = call.id;

  const std::shared_ptr<HttpSink> sink = DispatchCall(
      std::move(call), req, res, [endpoint](Status st) { return ForEndpoint(st, endpoint); });
  if (sink == nullptr) return;  // an error, or a relayed answer: written

  // Answered here.
  ResponseMeta meta;
  meta.id = request_id;
  meta.created = clock_->UnixSeconds();
  meta.model = sink->meta().model;
  meta.system_fingerprint = sink->meta().system_fingerprint;
  meta.service_tier = service_tier;

  if (!stream) {
    std::vector<Choice> choices(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      choices[static_cast<size_t>(i)].index = i;
      choices[static_cast<size_t>(i)].text = echo;
      choices[static_cast<size_t>(i)].has_logprobs = logprobs;
      choices[static_cast<size_t>(i)].text_offset = static_cast<int64_t>(echo.size());
    }
    for (bool ended = false; !ended;) {
      for (auto& p : sink->TakePieces(&ended)) {
        Choice& c = choices.at(static_cast<size_t>(p.choice));
        c.text += p.text;
        for (auto& t : p.logprobs) c.logprobs.push_back(std::move(t));
      }
    }
    sink->Cancel();
    const scheduler::GenerationResult& r = sink->result();
    if (r.finish == FinishReason::kError) return fail(r.error);
    for (auto& c : choices) {
      c.finish = static_cast<size_t>(c.index) < r.choices.size() ? r.choices[c.index] : r.finish;
      if (sink->meta().answer_parser) ApplyParsedAnswer(&c, *sink->meta().answer_parser, *random_);
    }
    res.set_content(
        chat ? ChatCompletionBody(meta, choices, r.usage) : CompletionBody(meta, choices, r.usage),
        "application/json");
    return;
  }

  auto st = std::make_shared<Stream>();
  st->sink = sink;
  st->meta = std::move(meta);
  st->chat = chat;
  st->include_usage = include_usage;
  st->logprobs = logprobs;
  st->n = n;
  st->text_offset.assign(static_cast<size_t>(n), 0);
  if (sink->meta().answer_parser) {
    for (int i = 0; i < n; ++i) st->parsed.emplace_back(sink->meta().answer_parser, random_);
  }
  const ApiStats stats = stats_;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_stream(
      "text/event-stream",
      [st, stats, path](ChunkWriter& out) {
        auto write = [&](const std::string& s) { return out.Write(s); };
        if (st->finished) {
          return false;
        }
        if (st->chat && !st->role_sent) {
          for (int i = 0; i < st->n; ++i) {
            Choice c;
            c.index = i;
            if (!write(SseData(ChatChunk(st->meta, c, /*role_start=*/true)))) return false;
          }
          st->role_sent = true;
        }
        bool ended = false;
        for (auto& p : st->sink->TakePieces(&ended)) {
          const auto i = static_cast<size_t>(p.choice);
          Choice c;
          if (!st->parsed.empty()) {  // thinking, content and calls, as far as the answer tells
            c = st->parsed[i].Feed(p.text);
            c.index = p.choice;
            c.has_logprobs = st->logprobs;
            c.logprobs = std::move(p.logprobs);
            if (c.reasoning.empty() && c.text.empty() && c.tool_calls.empty() && c.logprobs.empty())
              continue;
            if (!write(SseData(ChatChunk(st->meta, c, false, /*content=*/!c.text.empty()))))
              return false;
            continue;
          }
          c.index = p.choice;
          c.has_logprobs = st->logprobs;
          c.text_offset = st->text_offset[i];
          c.text = std::move(p.text);
          c.logprobs = std::move(p.logprobs);
          st->text_offset[i] += static_cast<int64_t>(c.text.size());
          if (c.text.empty() && c.logprobs.empty()) continue;
          if (!write(
                  SseData(st->chat ? ChatChunk(st->meta, c, false) : CompletionChunk(st->meta, c))))
            return false;
        }
        if (!ended) return true;
        st->finished = true;
        const scheduler::GenerationResult& r = st->sink->result();
        if (r.finish == FinishReason::kError) {
          // Headers are gone; report in-band as OpenAI does, then end the stream.
          write(SseData(ErrorBody(r.error)));
          stats.requests.With({path, std::to_string(HttpStatusFor(r.error.code()))}).Add();
          write(SseDone());
          return false;
        }
        for (int i = 0; i < st->n; ++i) {
          Choice end;
          end.index = i;
          end.finish = static_cast<size_t>(i) < r.choices.size() ? r.choices[i] : r.finish;
          if (!st->parsed.empty()) {
            AnswerStream& ts = st->parsed[static_cast<size_t>(i)];
            Choice t = ts.Finish(end.finish == FinishReason::kLength);
            t.index = i;
            if (!t.tool_calls.empty() || !t.text.empty() || !t.reasoning.empty()) {
              if (!write(SseData(ChatChunk(st->meta, t, false, /*content=*/!t.text.empty()))))
                return false;
            }
            end.tool_calls_finish = ts.called();
          }
          const std::string last = st->chat ? ChatChunk(st->meta, end, false, /*content=*/false)
                                            : CompletionChunk(st->meta, end);
          if (!write(SseData(last))) return false;
        }
        if (st->include_usage && !write(SseData(UsageChunk(st->meta, st->chat, r.usage))))
          return false;
        stats.requests.With({path, "200"}).Add();
        write(SseDone());
        return false;
      },
      [st](bool) {
        // Connection closed (or stream ended): free the sequence if still running.
        st->sink->Cancel();
      });
}

}  // namespace outpost::api

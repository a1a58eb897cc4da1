// HttpServer::HandleResponses — POST /v1/responses, OpenAI's Responses API:
// the body becomes the chat call it means (responses_request.h; a
// previous_response_id's stored items in front), dispatched like any
// completion (call_dispatch.cc: headers, audit, routing; an upstream gets
// the body as it came, or with the stored items in place of the id, at its
// /v1/responses), and a local answer is written as a Response object or its
// event stream (responses_response.h). With `store` (the default) and a
// response store, the answer — local or relayed — is kept before its last
// byte is sent, so the next turn can continue it at once; with a
// `conversation`, this input and the answer's output are added to it then.
// With `background`, the same turn runs on a thread of its own
// (responses_background.cc). The stored ones: responses_stored.cc. What
// the three share: responses_turn.h.
//
// HttpServer::HandleInputTokens — POST /v1/responses/input_tokens: how many
// tokens the body's prompt is, with a served model's template and tokenizer.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "outpost/api/errors.h"
#include "outpost/api/http_server.h"
#include "outpost/api/http_sink.h"
#include "outpost/api/json_fields.h"
#include "outpost/api/parsed_answer.h"
#include "outpost/api/responses_turn.h"
#include "outpost/api/sse.h"
#include "outpost/router/local_target.h"

namespace outpost::api {
namespace {

using nlohmann::json;
using scheduler::FinishReason;

struct ResponseStream {
  std::shared_ptr<HttpSink> sink;
  std::unique_ptr<ResponseEvents> events;
  std::unique_ptr<AnswerStream> parsed;  // when the answer is parsed (tools, thinking)
  bool started = false;
  bool finished = false;
};

}  // namespace

void HttpServer::HandleResponses(const HttpRequest& req, HttpResponse& res) {
  if (!serving_->ready()) {
    return SendError(res, Status::Unavailable("the model is still loading").WithRetryAfter(1));
  }
  std::unique_ptr<ResponseTurn> turn = PrepareResponse(req, res);
  if (turn == nullptr) return;  // the error is written
  if (turn->background) return StartBackground(std::move(turn), req, res);
  RunResponse(std::move(*turn), req, res);
}

std::unique_ptr<HttpServer::ResponseTurn> HttpServer::PrepareResponse(const HttpRequest& req,
                                                                      HttpResponse& res) {
  auto fail = [&](const Status& st) {
    SendError(res, st);
    return nullptr;
  };
  auto turn = std::make_unique<ResponseTurn>();
  Keeper& keep = turn->keep;
  keep.owner = OwnerOf(req);
  keep.clock = clock_;
  keep.retention_s = responses_retention_s_;
  auto parsed = ParseResponseBody(req.body, responses_, conversations_, keep.owner, clock_, random_,
                                  &keep.hold);
  if (!parsed.ok()) return fail(parsed.status());
  if (parsed->store) keep.store = responses_;
  if (!parsed->conversation_id.empty()) {
    keep.conversations = conversations_;
    keep.conversation_id = std::move(parsed->conversation_id);
  }
  if (keep.active()) {
    keep.input_items = std::move(parsed->input_items);
    keep.context = std::move(parsed->context);
  }
  router::CompletionCall& call = turn->call;
  call.request = std::move(parsed->chat);
  if (Status st = ReadCallHeaders(req, &call); !st.ok()) return fail(st);
  if (parsed->truncate) {
    // Only a model served here: an upstream gets `truncation` as it came.
    if (const auto model = serving_->Find(call.request.model)) {
      if (Status st = TruncateToFit(*model, &call); !st.ok()) return fail(ForResponses(st));
    }
  }
  // An upstream never stored the earlier turns: it gets them in the input.
  if (!parsed->expanded_body.empty()) call.body = std::move(parsed->expanded_body);
  call.id = NewId("resp_", *random_);
  ResponseInfo& info = turn->info;
  info.id = call.id;
  info.created_at = clock_->UnixSeconds();
  info.service_tier = scheduler::ServiceTierName(call.priority);
  // Until an answer says which served it: the model asked for (a served
  // one by its id: "" is the default model).
  info.model = call.request.model;
  if (const auto model = serving_->Find(call.request.model)) info.model = model->id;
  info.echo = std::move(parsed->echo);
  turn->background = parsed->background;
  return turn;
}

void HttpServer::RunResponse(ResponseTurn turn, const HttpRequest& req, HttpResponse& res) {
  const std::string path = router::EndpointPath(router::Endpoint::kResponses);
  auto fail = [&](const Status& st) { SendError(res, st); };
  const Keeper& keep = turn.keep;
  ResponseInfo& info = turn.info;
  const bool stream = turn.call.request.stream;
  const bool logprobs = turn.call.request.top_logprobs >= 0;

  // A relayed answer states what this server did with the request, not
  // what the upstream (which never saw the id or the conversation) did.
  RelayedResponse relayed;
  relayed.counted = turn.counted;
  if (keep.active()) relayed.keep = keep;
  {
    const json echo = json::parse(info.echo, nullptr, false);
    json fields = json::object();
    for (const char* key : {"store", "previous_response_id", "conversation", "background"}) {
      if (echo.is_object() && echo.contains(key)) fields[key] = echo[key];
    }
    // A background response was named here before the upstream saw it.
    if (turn.background) fields["id"] = info.id;
    relayed.fields = fields.dump();
  }
  const std::shared_ptr<HttpSink> sink =
      DispatchCall(std::move(turn.call), req, res, ForResponses, &relayed);
  if (sink == nullptr) return;  // an error, or a relayed answer: written
  info.model = sink->meta().model;
  const auto& parser = sink->meta().answer_parser;

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
    // The client has gone: nothing was answered, nothing is kept.
    if (r.finish == FinishReason::kCancelled) return fail(Status::Cancelled("the client has gone"));
    answer.finish = r.finish;
    if (parser) ApplyParsedAnswer(&answer, *parser, *random_);
    info.completed_at = clock_->UnixSeconds();
    std::string body = ResponseBody(info, answer, r.usage, *random_);
    keep(body);
    res.set_content(std::move(body), "application/json");
    return;
  }

  auto st = std::make_shared<ResponseStream>();
  st->sink = sink;
  st->events = std::make_unique<ResponseEvents>(std::move(info), random_);
  if (parser) st->parsed = std::make_unique<AnswerStream>(parser, random_);
  const ApiStats stats = stats_;
  const util::Clock* clock = clock_;
  const bool counted = turn.counted;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_stream(
      "text/event-stream",
      [st, stats, path, clock, keep, counted](ChunkWriter& out) {
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
          if (st->parsed) {
            delta = st->parsed->Feed(p.text);
            delta.logprobs = std::move(p.logprobs);
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
          keep.Release();
          if (counted) {
            stats.requests.With({path, std::to_string(HttpStatusFor(r.error.code()))}).Add();
          }
          out.Write(events);
          return false;
        }
        if (r.finish == FinishReason::kCancelled) {
          keep.Release();  // the client has gone: nothing is kept
          return false;
        }
        if (st->parsed) {
          events += st->events->Delta(st->parsed->Finish(r.finish == FinishReason::kLength));
        }
        events += st->events->Finish(r.finish, r.usage, clock->UnixSeconds());
        keep(st->events->final_response());
        if (counted) stats.requests.With({path, "200"}).Add();
        out.Write(events);
        return false;
      },
      [st](bool) { st->sink->Cancel(); });
}

void HttpServer::HandleInputTokens(const HttpRequest& req, HttpResponse& res) {
  if (!serving_->ready()) {
    return SendError(res, Status::Unavailable("the model is still loading").WithRetryAfter(1));
  }
  auto parsed = ParseResponseBody(req.body, responses_, conversations_, OwnerOf(req), clock_,
                                  random_, nullptr);
  if (!parsed.ok()) return SendError(res, parsed.status());
  router::CompletionCall call;
  call.request = std::move(parsed->chat);
  const auto model = serving_->Find(call.request.model);
  if (model == nullptr) {
    return SendError(res, Status::NotFound("the model '" + call.request.model +
                                               "' is not served here; input tokens are counted "
                                               "with a served model's tokenizer (GET /v1/models)",
                                           "model"));
  }
  // The prompt exactly as a generation would build it: truncated, template,
  // tools, tokens.
  if (parsed->truncate) {
    if (Status st = TruncateToFit(*model, &call); !st.ok()) return SendError(res, ForResponses(st));
  }
  scheduler::GenerationRequest gen;
  if (Status st = router::LocalTarget::Prepare(*model, call, &gen); !st.ok()) {
    return SendError(res, ForResponses(st));
  }
  res.set_content(json{{"object", "response.input_tokens"},
                       {"input_tokens", static_cast<int64_t>(gen.prompt.size())}}
                      .dump(),
                  "application/json");
}

}  // namespace outpost::api

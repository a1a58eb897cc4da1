// HttpServer::HandleGenerate — POST /v1/chat/completions and /v1/completions:
// parse → resolve model → template + tokenize → Submit → JSON or SSE stream.
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <climits>
#include <cstdlib>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <optional>

#include "outpost/api/errors.h"
#include "outpost/api/http_server.h"
#include "outpost/api/openai_request.h"
#include "outpost/api/openai_response.h"
#include "outpost/api/sse.h"
#include "outpost/router/proxy.h"
#include "outpost/router/router.h"

namespace outpost::api {
namespace {

using scheduler::FinishReason;
using scheduler::GenerationEvent;
using scheduler::RequestHandle;

constexpr std::chrono::milliseconds kPollInterval{50};

// State shared by the chunked content provider calls of one stream.
struct StreamState {
  std::shared_ptr<RequestHandle> handle;
  std::optional<GenerationEvent> first;
  ResponseMeta meta;
  bool chat = true;
  bool include_usage = false;
  bool role_sent = false;
  bool finished = false;
};

}  // namespace

void HttpServer::HandleGenerate(bool chat, const httplib::Request& req, httplib::Response& res) {
  const std::string endpoint = chat ? "/v1/chat/completions" : "/v1/completions";
  auto fail = [&](const Status& st, int32_t retry_after_s = 0) {
    res.status = HttpStatusFor(st.code());
    if (retry_after_s > 0) res.set_header("Retry-After", std::to_string(retry_after_s));
    res.set_content(ErrorBody(st), "application/json");
  };
  if (!catalog_->ready()) return fail(Status::Unavailable("the model is still loading"), 1);

  auto priority = ParsePriority(req.get_header_value("X-Outpost-Priority"));
  if (!priority.ok()) return fail(priority.status());

  // Token ids are checked against the vocabulary once the target is known.
  auto parsed = ParseRequest(chat ? Endpoint::kChat : Endpoint::kCompletion, req.body, INT32_MAX);
  if (!parsed.ok()) return fail(parsed.status());
  auto served = catalog_->Find(parsed->model);

  // Prompt tokens are needed both by the router (difficulty rules) and the
  // local path; compute them once when this node serves the model.
  std::vector<engine::Token> prompt_tokens;
  auto tokenize = [&]() -> Status {
    const engine::Model& m = served->scheduler->model();
    if (Status st = ValidateTokenIds(*parsed, m.VocabSize()); !st.ok()) return st;
    if (chat) {
      auto prompt = m.ApplyChatTemplate(parsed->messages);
      if (!prompt.ok()) return prompt.status();
      prompt_tokens = m.Tokenize(*prompt, /*add_special=*/true, /*parse_special=*/true);
    } else if (!parsed->prompt_tokens.empty()) {
      prompt_tokens = parsed->prompt_tokens;
    } else {
      prompt_tokens = m.Tokenize(parsed->prompt, /*add_special=*/true, /*parse_special=*/true);
    }
    return Status::Ok();
  };

  // A request another Outpost forwarded is answered here, never forwarded again.
  const bool forwarded = req.has_header(router::kForwardedHeader);
  if (router_ != nullptr && forwarded) {
    res.set_header("X-Outpost-Route", "local");
    res.set_header("X-Outpost-Route-Reason", "forwarded");
    metrics_->CountRoute("local", "forwarded");
  }
  std::string cascade_to;  // central upstream for the confidence cascade, if any
  if (router_ != nullptr && !forwarded) {
    std::string bearer = req.get_header_value("Authorization");
    if (bearer.rfind("Bearer ", 0) == 0) bearer = bearer.substr(7);
    auto data_class = router_->DataClass(bearer, req.get_header_value("X-Data-Class"));
    if (!data_class.ok()) return fail(data_class.status());
    router::RouteInput in;
    in.data_class = *data_class;
    in.model = parsed->model;
    in.local_serves_model = served.has_value();
    if (served) {
      if (Status st = tokenize(); !st.ok()) return fail(st);
      in.prompt_tokens = static_cast<int32_t>(prompt_tokens.size());
      const auto snap = served->scheduler->Snapshot();
      in.local_full = snap.active + snap.queued >= snap.max_sessions + snap.max_queue;
      in.local_wait_ms =
          snap.active + snap.queued < snap.max_sessions ? 0 : served->scheduler->EstimatedWaitMs();
    } else {
      in.prompt_tokens = static_cast<int32_t>(req.body.size() / 4);
    }
    in.max_tokens = parsed->max_tokens > 0 ? parsed->max_tokens : 0;
    in.wants_tools = parsed->wants_tools;
    in.tier = req.get_header_value("X-Outpost-Tier");
    in.stream = parsed->stream;
    in.latency_budget_ms = router_->TenantBudgetMs(bearer);
    if (const std::string b = req.get_header_value("X-Latency-Budget-Ms"); !b.empty()) {
      in.latency_budget_ms = std::atoll(b.c_str());
    }
    const router::RouteDecision d = router_->Decide(in);
    if (d.targets.empty()) {
      metrics_->CountRoute("reject", d.reason);
      res.set_header("X-Outpost-Route", "reject");
      res.set_header("X-Outpost-Route-Reason", d.reason);
      spdlog::info("route {} {}: reject ({}) {}", endpoint, parsed->model, d.reason,
                   d.reject.message());
      return fail(d.reject, d.reject.code() == StatusCode::kResourceExhausted ||
                                    d.reject.code() == StatusCode::kUnavailable
                                ? 1
                                : 0);
    }
    Status last_error;
    for (const std::string& target : d.targets) {
      if (target == "local") {
        metrics_->CountRoute("local", d.reason);
        res.set_header("X-Outpost-Route", "local");
        res.set_header("X-Outpost-Route-Reason", d.reason);
        spdlog::debug("route {} {}: local ({})", endpoint, parsed->model, d.reason);
        cascade_to = d.cascade_to;
        break;
      }
      if (TryProxy(target, endpoint, d.reason, parsed->model, parsed->stream, req, res,
                   &last_error)) {
        return;
      }
    }
    if (res.get_header_value("X-Outpost-Route") != "local") {
      metrics_->CountRoute("reject", d.reason + ";upstreams_failed");
      res.set_header("X-Outpost-Route", "reject");
      return fail(Status::Unavailable("no upstream could take the request (" + d.reason +
                                      "): " + last_error.message()),
                  1);
    }
  }

  if (!served) {
    return fail(Status::NotFound(
        "the model '" + parsed->model + "' does not exist; GET /v1/models lists the served models",
        "model"));
  }
  if (parsed->wants_tools) {
    return fail(
        Status::InvalidArgument("tools and JSON-schema output are not supported by the local "
                                "model; configure a central upstream to route them",
                                "tools"));
  }
  if (prompt_tokens.empty()) {
    if (Status st = tokenize(); !st.ok()) return fail(st);
  }
  const engine::Model& model = served->scheduler->model();

  scheduler::GenerationRequest gen;
  gen.id = NewId(chat ? "chatcmpl-" : "cmpl-");
  gen.priority = *priority;
  gen.sampling = parsed->sampling;
  gen.max_tokens = parsed->max_tokens;
  gen.stop = parsed->stop;
  gen.want_logprobs = !cascade_to.empty();
  if (parsed->ignore_eos) {
    for (engine::Token t : model.EndOfGenerationTokens())
      gen.sampling.logit_bias.emplace_back(t, -100.0f);
  }
  gen.prompt = std::move(prompt_tokens);
  if (chat) {
    for (const auto& s : model.TemplateStops()) gen.stop.push_back(s);
  }

  const std::string request_id = gen.id;
  int32_t retry_after = 0;
  auto submitted = served->scheduler->Submit(std::move(gen), &retry_after);
  if (!submitted.ok()) {
    const Status& st = submitted.status();
    // The scheduler names chat fields; completions call the prompt "prompt".
    if (!chat && st.param() == "messages") return fail(Status(st.code(), st.message(), "prompt"));
    return fail(st, retry_after);
  }
  std::shared_ptr<RequestHandle> handle = std::move(submitted).value();

  ResponseMeta meta;
  meta.id = request_id;
  meta.created = static_cast<int64_t>(std::time(nullptr));
  meta.model = served->id;
  meta.system_fingerprint = served->system_fingerprint;

  // Wait for the first event before answering: a request that expires in the
  // queue must still get a real 503, not a 200 stream with an error inside.
  GenerationEvent first;
  while (!handle->Pop(&first, kPollInterval)) {
  }
  if (first.done && first.finish == FinishReason::kError) {
    return fail(first.error, first.retry_after_s);
  }

  if (!parsed->stream) {
    std::string text = parsed->echo ? parsed->prompt : std::string();
    GenerationEvent ev = std::move(first);
    for (;;) {
      text += ev.text;
      if (ev.done) break;
      while (!handle->Pop(&ev, kPollInterval)) {
      }
    }
    if (ev.finish == FinishReason::kError) return fail(ev.error);
    if (!cascade_to.empty()) {
      // Confidence cascade: a low mean log-probability sends the request to
      // central; both costs are recorded (local tokens in the usual counters,
      // central's in the proxied ones).
      const double mean = ev.usage.sum_logprob / std::max(1, ev.usage.completion_tokens);
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.4f", mean);
      res.set_header("X-Outpost-Local-Mean-Logprob", buf);
      if (mean < router_->config().policy.cascade_min_mean_logprob) {
        Status last_error;
        res.set_header("X-Outpost-Local-Completion-Tokens",
                       std::to_string(ev.usage.completion_tokens));
        res.headers.erase("X-Outpost-Route");  // TryProxy sets the route it takes
        res.headers.erase("X-Outpost-Route-Reason");
        if (TryProxy(cascade_to, endpoint, "cascade:low_confidence", parsed->model,
                     /*stream=*/false, req, res, &last_error)) {
          metrics_->CountRoute("cascade", "escalated");
          return;
        }
        metrics_->CountRoute("cascade", "escalation_failed");
        res.set_header("X-Outpost-Route", "local");
        res.set_header("X-Outpost-Route-Reason", "cascade:central_failed;local_answer");
      } else {
        metrics_->CountRoute("cascade", "kept_local");
      }
    }
    res.set_content(chat ? ChatCompletionBody(meta, text, ev.finish, ev.usage)
                         : CompletionBody(meta, text, ev.finish, ev.usage),
                    "application/json");
    return;
  }

  auto st = std::make_shared<StreamState>();
  st->handle = handle;
  st->first = std::move(first);
  st->meta = std::move(meta);
  st->chat = chat;
  st->include_usage = parsed->include_usage;
  telemetry::Metrics* metrics = metrics_;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [st, metrics, endpoint](size_t, httplib::DataSink& sink) {
        auto write = [&](const std::string& s) { return sink.write(s.data(), s.size()); };
        if (st->finished) {
          sink.done();
          return true;
        }
        if (st->chat && !st->role_sent) {
          const std::string empty;
          if (!write(
                  SseData(ChatChunk(st->meta, &empty, /*role_start=*/true, FinishReason::kNone))))
            return false;
          st->role_sent = true;
        }
        GenerationEvent ev;
        if (st->first) {
          ev = std::move(*st->first);
          st->first.reset();
        } else {
          while (!st->handle->Pop(&ev, kPollInterval)) {
            if (!sink.is_writable()) return false;  // client gone: releaser cancels
          }
        }
        if (!ev.text.empty()) {
          const std::string chunk = st->chat
                                        ? ChatChunk(st->meta, &ev.text, false, FinishReason::kNone)
                                        : CompletionChunk(st->meta, ev.text, FinishReason::kNone);
          if (!write(SseData(chunk))) return false;
        }
        if (!ev.done) return true;
        st->finished = true;
        if (ev.finish == FinishReason::kError) {
          // Headers are gone; report in-band as OpenAI does, then end the stream.
          write(SseData(ErrorBody(ev.error)));
          metrics->CountRequest(endpoint, HttpStatusFor(ev.error.code()));
        } else {
          const std::string last = st->chat ? ChatChunk(st->meta, nullptr, false, ev.finish)
                                            : CompletionChunk(st->meta, "", ev.finish);
          if (!write(SseData(last))) return false;
          if (st->include_usage && !write(SseData(UsageChunk(st->meta, st->chat, ev.usage))))
            return false;
          metrics->CountRequest(endpoint, 200);
        }
        write(SseDone());
        sink.done();
        return true;
      },
      [st](bool /*success*/) {
        // Connection closed before the stream ended: free the sequence.
        if (!st->finished) st->handle->Cancel();
      });
}

}  // namespace outpost::api

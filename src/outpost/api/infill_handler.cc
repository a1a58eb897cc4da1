// HttpServer::HandleInfill — POST /infill, llama-server's fill-in-the-middle
// endpoint for code editors (llama.vscode, llama.vim): the body read by
// ParseInfillRequest into a /v1/completions call with its gap, answered on
// this node (no upstream gives this shape) in llama-server's native shape —
// {content, stop, tokens_predicted, tokens_evaluated, timings, …}, streamed
// as `data:` lines of content with the whole object last (no [DONE]).
#include <nlohmann/json.hpp>

#include <memory>
#include <string>

#include "outpost/api/errors.h"
#include "outpost/api/http_server.h"
#include "outpost/api/http_sink.h"
#include "outpost/api/indent_limit.h"
#include "outpost/api/infill_request.h"
#include "outpost/api/json_fields.h"
#include "outpost/api/openai_response.h"
#include "outpost/api/sse.h"

namespace outpost::api {
namespace {

using json = nlohmann::json;
using scheduler::FinishReason;

// Milliseconds between two points of the request's life.
double Ms(util::Clock::TimePoint from, util::Clock::TimePoint to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

// The native answer's fields. Timings are measured here, at the HTTP layer:
// prompt_ms runs from arrival to the first text (queueing included),
// predicted_ms from there to the end.
struct Native {
  std::string model;
  std::string content;
  util::Clock::TimePoint arrived, first, ended;
  bool has_first = false;
  bool has_new_line = false;   // content holds a complete line
  int64_t max_predict_ms = 0;  // t_max_predict_ms; 0: none
  IndentLimit indent{0};       // n_indent
  bool limited = false;        // ended by one of the two: what came after is dropped
  bool finished = false;       // streamed: the last object is written

  // Takes one piece of text received at `now`; returns how much of it the
  // answer keeps: all of it, or less where a line starts left of n_indent
  // (the answer ends before that line's first character). Once `limited`
  // (that, or t_max_predict_ms passed with a line complete), nothing more
  // is kept: the answer ends, as llama-server ends it.
  size_t Take(const std::string& text, util::Clock::TimePoint now) {
    if (limited) return 0;
    if (!has_first) {
      first = now;
      has_first = true;
    }
    const size_t before = content.size();
    content += text;
    content.resize(indent.End(content));
    has_new_line = has_new_line || content.find('\n', before) != std::string::npos;
    limited = indent.cut() || (max_predict_ms > 0 && has_new_line &&
                               Ms(first, now) > static_cast<double>(max_predict_ms));
    return content.size() > before ? content.size() - before : 0;
  }
};

json Timings(const Native& a, const scheduler::Usage& u) {
  const double prompt_ms = a.has_first ? Ms(a.arrived, a.first) : Ms(a.arrived, a.ended);
  const double predicted_ms = a.has_first ? Ms(a.first, a.ended) : 0.0;
  const int prompt_n = u.prompt_tokens - u.cached_tokens;
  const auto per = [](double ms, int n) { return n > 0 ? ms / n : 0.0; };
  const auto rate = [](double ms, int n) { return ms > 0 ? 1e3 * n / ms : 0.0; };
  return json{{"cache_n", u.cached_tokens},
              {"prompt_n", prompt_n},
              {"prompt_ms", prompt_ms},
              {"prompt_per_token_ms", per(prompt_ms, prompt_n)},
              {"prompt_per_second", rate(prompt_ms, prompt_n)},
              {"predicted_n", u.completion_tokens},
              {"predicted_ms", predicted_ms},
              {"predicted_per_token_ms", per(predicted_ms, u.completion_tokens)},
              {"predicted_per_second", rate(predicted_ms, u.completion_tokens)}};
}

// The last object: the whole answer (or, streamed, its end with empty content).
json FinalObject(const Native& a, const scheduler::GenerationResult& r,
                 const std::string& content) {
  return json{{"index", 0},
              {"content", content},
              {"tokens", json::array()},
              {"id_slot", -1},
              {"stop", true},
              {"model", a.model},
              {"tokens_predicted", r.usage.completion_tokens},
              {"tokens_evaluated", r.usage.prompt_tokens},
              {"has_new_line", a.has_new_line},
              {"truncated", false},
              // A stop string and the end of generation are one finish here.
              {"stop_type", r.finish == FinishReason::kLength || a.limited ? "limit" : "eos"},
              {"stopping_word", ""},
              {"tokens_cached", r.usage.cached_tokens},
              {"timings", Timings(a, r.usage)}};
}

}  // namespace

void HttpServer::HandleInfill(const HttpRequest& req, HttpResponse& res) {
  auto fail = [&](const Status& st) { SendError(res, st); };
  if (!serving_->ready()) {
    return fail(Status::Unavailable("the model is still loading").WithRetryAfter(1));
  }
  auto native = std::make_shared<Native>();
  native->arrived = clock_->Now();
  auto parsed = ParseInfillRequest(req.body);
  if (!parsed.ok()) return fail(parsed.status());
  router::CompletionCall call;
  call.request = std::move(parsed->request);
  const std::vector<std::string> fields = std::move(parsed->response_fields);
  native->max_predict_ms = parsed->max_predict_ms;
  native->indent = IndentLimit(parsed->n_indent);
  const auto for_infill = [limit = parsed->limit_field](const Status& st) {
    return ForInfill(st, limit);
  };
  if (Status st = ReadCallHeaders(req, &call); !st.ok()) return fail(st);
  call.local_only = true;
  call.id = NewId("cmpl-", *random_);
  const bool stream = call.request.stream;
  const std::shared_ptr<HttpSink> sink = DispatchCall(std::move(call), req, res, for_infill);
  if (sink == nullptr) return;  // an error: written
  native->model = sink->meta().model;

  if (!stream) {
    for (bool ended = false; !ended;) {
      for (auto& p : sink->TakePieces(&ended)) {
        native->Take(p.text, clock_->Now());
        if (native->limited) sink->Cancel();
      }
    }
    native->ended = clock_->Now();
    sink->Cancel();
    const scheduler::GenerationResult& r = sink->result();
    if (r.finish == FinishReason::kError && !native->limited) {
      return fail(for_infill(r.error));
    }
    res.set_content(
        DumpLossy(SelectResponseFields(FinalObject(*native, r, native->content), fields)),
        "application/json");
    return;
  }

  const ApiStats stats = stats_;
  const util::Clock* clock = clock_;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_stream(
      "text/event-stream",
      [sink, native, stats, clock, for_infill](ChunkWriter& out) {
        if (native->finished) return false;
        bool ended = false;
        for (auto& p : sink->TakePieces(&ended)) {
          if (p.text.empty()) continue;
          const size_t kept = native->Take(p.text, clock->Now());
          if (native->limited) sink->Cancel();
          if (kept == 0) continue;
          const json chunk{{"index", 0},
                           {"content", p.text.substr(0, kept)},
                           {"tokens", json::array()},
                           {"stop", false},
                           {"id_slot", -1}};
          if (!out.Write(SseData(DumpLossy(chunk)))) return false;
        }
        if (!ended) return true;
        native->finished = true;
        native->ended = clock->Now();
        const scheduler::GenerationResult& r = sink->result();
        if (r.finish == FinishReason::kError && !native->limited) {
          // Headers are gone: the error in-band, as llama-server sends it.
          out.Write(SseData(ErrorBody(for_infill(r.error))));
          stats.requests.With({"/infill", std::to_string(HttpStatusFor(r.error.code()))}).Add();
          return false;
        }
        out.Write(SseData(DumpLossy(FinalObject(*native, r, ""))));
        stats.requests.With({"/infill", "200"}).Add();
        return false;
      },
      [sink](bool) { sink->Cancel(); });
}

}  // namespace outpost::api

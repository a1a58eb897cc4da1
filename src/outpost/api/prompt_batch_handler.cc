// HttpServer::HandlePromptBatch — /v1/completions with several prompts: one
// call per prompt, dispatched together (they run side by side in the
// scheduler), answered as one response whose choices are numbered
// prompt × n + j, as OpenAI numbers them. Answered on this node: several
// relayed bodies cannot be merged into one answer. Streamed, each prompt's
// chunks follow the previous prompt's (each chunk names its choice).

#include <memory>

#include "outpost/api/errors.h"
#include "outpost/api/http_server.h"
#include "outpost/api/http_sink.h"
#include "outpost/api/openai_response.h"
#include "outpost/api/sse.h"

namespace outpost::api {
namespace {

using scheduler::FinishReason;

struct Batch {
  std::vector<std::shared_ptr<HttpSink>> sinks;
  std::vector<std::unique_ptr<router::InFlight>> in_flight;
  ResponseMeta meta;
  int n = 1;
  bool logprobs = false;
  bool include_usage = false;
  size_t current = 0;  // streaming: the prompt being written
  std::vector<int64_t> text_offset;
  scheduler::Usage usage;
  bool finished = false;

  void CancelAll() {
    for (auto& s : sinks) s->Cancel();
  }
};

void Add(scheduler::Usage* total, const scheduler::Usage& u) {
  total->prompt_tokens += u.prompt_tokens;
  total->completion_tokens += u.completion_tokens;
}

}  // namespace

void HttpServer::HandlePromptBatch(router::CompletionCall call, const HttpRequest& req,
                                   HttpResponse& res) {
  auto fail = [&](const Status& st) { SendError(res, st); };
  auto b = std::make_shared<Batch>();
  b->n = call.request.n;
  b->logprobs = call.request.top_logprobs >= 0;
  b->include_usage = call.request.include_usage;
  const bool stream = call.request.stream;
  const bool echo = call.request.echo;
  std::vector<router::BatchPrompt> prompts = std::move(call.request.batch_prompts);
  call.request.batch_prompts.clear();
  call.tier = router::Tier::kLocal;
  for (auto& p : prompts) {
    router::CompletionCall one = call;
    one.request.prompt = p.text;  // kept: echo needs it
    one.request.prompt_tokens = std::move(p.tokens);
    auto sink = std::make_shared<HttpSink>(req.client_gone);
    b->in_flight.push_back(dispatcher_->Dispatch(std::move(one), sink));
    b->sinks.push_back(std::move(sink));
  }
  // Every prompt must be accepted; otherwise the first refusal is the answer.
  for (auto& s : b->sinks) {
    const HttpSink::Answer a = s->WaitStart();
    if (a == HttpSink::Answer::kError) {
      b->CancelAll();
      return fail(s->error().param() == "prompt" ? Status(s->error()).WithParam("prompt")
                                                 : s->error());
    }
    if (a == HttpSink::Answer::kRelay) {
      b->CancelAll();
      return fail(Status::Internal("a prompt of a batch was relayed upstream"));
    }
  }
  b->meta.id = call.id;
  b->meta.created = clock_->UnixSeconds();
  b->meta.model = b->sinks[0]->meta().model;
  b->meta.system_fingerprint = b->sinks[0]->meta().system_fingerprint;
  b->meta.service_tier = scheduler::ServiceTierName(call.priority);

  if (!stream) {
    std::vector<Choice> choices;
    for (size_t i = 0; i < b->sinks.size(); ++i) {
      auto& s = b->sinks[i];
      std::vector<Choice> mine(static_cast<size_t>(b->n));
      const std::string prefix = echo ? prompts[i].text : std::string();
      for (int j = 0; j < b->n; ++j) {
        mine[static_cast<size_t>(j)].index = static_cast<int>(i) * b->n + j;
        mine[static_cast<size_t>(j)].text = prefix;
        mine[static_cast<size_t>(j)].has_logprobs = b->logprobs;
        mine[static_cast<size_t>(j)].text_offset = static_cast<int64_t>(prefix.size());
      }
      for (bool ended = false; !ended;) {
        for (auto& p : s->TakePieces(&ended)) {
          Choice& c = mine.at(static_cast<size_t>(p.choice));
          c.text += p.text;
          for (auto& t : p.logprobs) c.logprobs.push_back(std::move(t));
        }
      }
      const scheduler::GenerationResult& r = s->result();
      if (r.finish == FinishReason::kError) {
        b->CancelAll();
        return fail(r.error);
      }
      for (int j = 0; j < b->n; ++j) {
        mine[static_cast<size_t>(j)].finish = static_cast<size_t>(j) < r.choices.size()
                                                  ? r.choices[static_cast<size_t>(j)]
                                                  : r.finish;
        choices.push_back(std::move(mine[static_cast<size_t>(j)]));
      }
      Add(&b->usage, r.usage);
    }
    b->CancelAll();
    res.set_content(CompletionBody(b->meta, choices, b->usage), "application/json");
    return;
  }

  b->text_offset.assign(b->sinks.size() * static_cast<size_t>(b->n), 0);
  const ApiStats stats = stats_;
  const std::string path = router::EndpointPath(router::Endpoint::kCompletion);
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_stream(
      "text/event-stream",
      [b, stats, path](ChunkWriter& out) {
        auto write = [&](const std::string& s) { return out.Write(s); };
        if (b->finished) {
          return false;
        }
        auto& sink = b->sinks[b->current];
        const int base = static_cast<int>(b->current) * b->n;
        bool ended = false;
        for (auto& p : sink->TakePieces(&ended)) {
          Choice c;
          c.index = base + p.choice;
          c.has_logprobs = b->logprobs;
          c.text_offset = b->text_offset[static_cast<size_t>(c.index)];
          c.text = std::move(p.text);
          c.logprobs = std::move(p.logprobs);
          b->text_offset[static_cast<size_t>(c.index)] += static_cast<int64_t>(c.text.size());
          if (!c.text.empty() && !write(SseData(CompletionChunk(b->meta, c)))) return false;
        }
        if (!ended) return true;
        const scheduler::GenerationResult& r = sink->result();
        if (r.finish == FinishReason::kError) {
          write(SseData(ErrorBody(r.error)));
          stats.requests.With({path, std::to_string(HttpStatusFor(r.error.code()))}).Add();
          write(SseDone());
          b->finished = true;
          b->CancelAll();
          return false;
        }
        for (int j = 0; j < b->n; ++j) {
          Choice end;
          end.index = base + j;
          end.finish = static_cast<size_t>(j) < r.choices.size() ? r.choices[static_cast<size_t>(j)]
                                                                 : r.finish;
          if (!write(SseData(CompletionChunk(b->meta, end)))) return false;
        }
        Add(&b->usage, r.usage);
        if (++b->current < b->sinks.size()) return true;
        if (b->include_usage && !write(SseData(UsageChunk(b->meta, false, b->usage)))) return false;
        stats.requests.With({path, "200"}).Add();
        write(SseDone());
        b->finished = true;
        return false;
      },
      [b](bool) { b->CancelAll(); });
}

}  // namespace outpost::api

#include "outpost/router/local_target.h"

#include <chrono>
#include <mutex>

#include <spdlog/spdlog.h>

#include "outpost/engine/token_id.h"
#include "outpost/router/tool_calls.h"
#include "outpost/scheduler/scheduler.h"
#include "outpost/util/json_text.h"
#include "outpost/util/status_macros.h"
#include "outpost/util/thread_annotations.h"

namespace outpost::router {

// The two answers to one mirrored request — the active version's (side 0)
// and the candidate's (side 1) — compared once both are complete; the
// verdict goes to the candidate's outcomes. Either engine thread may finish
// last.
class ShadowCompare {
 public:
  explicit ShadowCompare(std::shared_ptr<models::VersionOutcomes> candidate)
      : candidate_(std::move(candidate)) {}

  void Done(int side, std::string text, bool complete) {
    std::lock_guard<std::mutex> lock(mu_);
    text_[side] = std::move(text);
    complete_ = complete_ && complete;
    if (++done_ < 2 || !complete_) return;
    candidate_->RecordComparison(text_[0] == text_[1]);
  }

 private:
  const std::shared_ptr<models::VersionOutcomes> candidate_;
  std::mutex mu_;
  std::string text_[2] OUTPOST_GUARDED_BY(mu_);
  bool complete_ OUTPOST_GUARDED_BY(mu_) = true;
  int done_ OUTPOST_GUARDED_BY(mu_) = 0;
};

namespace {

// Passes everything on to the client's sink (none: a shadow request, whose
// answer is dropped) and records how the request ended in its version's
// outcomes (errors, cut, empty, tokens, TTFT). With `compare`, the first
// choice's text goes to it as side `side`. A batch line's TTFT and decode
// time are not recorded: it waits and pauses for interactive work by design,
// and a canary is judged on what users wait for.
class OutcomeSink final : public scheduler::GenerationSink {
 public:
  OutcomeSink(std::shared_ptr<ResponseSink> sink, std::shared_ptr<models::VersionOutcomes> out,
              bool batch, std::shared_ptr<ShadowCompare> compare = nullptr, int side = 0)
      : sink_(std::move(sink)),
        out_(std::move(out)),
        compare_(std::move(compare)),
        side_(side),
        batch_(batch),
        start_(std::chrono::steady_clock::now()) {}

  void OnText(int choice, std::string text) override {
    if (ttft_s_ < 0) {
      ttft_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    }
    if (compare_ && choice == 0) text_ += text;
    if (sink_) sink_->OnText(choice, std::move(text));
  }
  void OnLogprobs(int choice, std::vector<scheduler::TokenInfo> tokens) override {
    if (sink_) sink_->OnLogprobs(choice, std::move(tokens));
  }
  void OnDone(scheduler::GenerationResult result) override {
    const bool error = result.finish == scheduler::FinishReason::kError;
    const bool cancelled = result.finish == scheduler::FinishReason::kCancelled;
    const double total_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const bool timed = ttft_s_ >= 0 && !batch_;
    out_->Record(error, cancelled, ttft_s_ < 0, result.usage.completion_tokens,
                 timed ? ttft_s_ : -1, timed ? total_s - ttft_s_ : -1);
    if (compare_) compare_->Done(side_, std::move(text_), !error && !cancelled);
    if (sink_) sink_->OnDone(std::move(result));
  }
  bool Cancelled() override { return sink_ && sink_->Cancelled(); }

 private:
  const std::shared_ptr<ResponseSink> sink_;
  const std::shared_ptr<models::VersionOutcomes> out_;
  const std::shared_ptr<ShadowCompare> compare_;
  const int side_;
  const bool batch_;
  const std::chrono::steady_clock::time_point start_;
  double ttft_s_ = -1;  // engine thread only
  std::string text_;    // engine thread only
};

}  // namespace

std::vector<engine::Token> LocalTarget::Tokenize(const models::ServedModel& model,
                                                 std::string_view text, bool add_special,
                                                 bool parse_special) {
  return model.scheduler->engine().Tokenize(text, add_special, parse_special);
}

StatusOr<std::vector<std::string>> LocalTarget::Pieces(const models::ServedModel& model,
                                                       const std::vector<engine::Token>& tokens,
                                                       const std::string& field) {
  const engine::Engine& e = model.scheduler->engine();
  const int32_t n_vocab = e.VocabSize();
  std::vector<std::string> out;
  out.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    OUTPOST_RETURN_IF_ERROR(
        engine::CheckTokenId(tokens[i], n_vocab, field + "[" + std::to_string(i) + "]"));
    out.push_back(e.TokenPiece(tokens[i], /*special=*/true));
  }
  return out;
}

int32_t LocalTarget::ContextLength(const models::ServedModel& model) {
  return model.scheduler->options().ctx_per_session;
}

int32_t LocalTarget::VocabSize(const models::ServedModel& model) {
  return model.scheduler->engine().VocabSize();
}

Status LocalTarget::Prepare(const models::ServedModel& model, const CompletionCall& call,
                            scheduler::GenerationRequest* gen) {
  const CompletionRequest& r = call.request;
  gen->id = call.id;
  gen->priority = call.priority;
  gen->max_queue_wait_ms = call.max_queue_wait_ms;
  gen->sampling = r.sampling;
  gen->max_tokens = r.max_tokens;
  gen->stop = r.stop;
  gen->top_logprobs = r.top_logprobs;
  gen->n = r.n;
  gen->cache_prompt = r.cache_prompt;
  gen->operation = r.endpoint == Endpoint::kCompletion ? "text_completion" : "chat";
  scheduler::PromptInput in;
  in.chat = r.endpoint != Endpoint::kCompletion;
  in.messages = r.messages;
  in.text = r.prompt;
  in.tokens = r.prompt_tokens;
  if (r.infill) {
    in.infill = *r.infill;
    in.infill->prefix = r.prompt;
  }
  in.response_format = r.response_format;
  in.options = r.chat_options;
  const engine::Engine& e = model.scheduler->engine();
  if (r.tools.active()) {
    // Each function's parameters constrain its calls: refuse what the grammar
    // cannot enforce, naming the tool (llama.cpp would silently drop it).
    for (size_t i = 0; i < r.tools.functions.size(); ++i) {
      const std::string& schema = r.tools.functions[i].parameters;
      if (schema.empty()) continue;
      auto g =
          e.GrammarFromJsonSchema(schema, "tools[" + std::to_string(i) + "].function.parameters");
      if (!g.ok()) return g.status();
    }
    // The model may call any of them: their enum values and branches count
    // together (grammar work on every token; util::SchemaAlternatives).
    size_t alternatives = 0;
    for (const auto& f : r.tools.functions) alternatives += util::SchemaAlternatives(f.parameters);
    if (alternatives > util::kMaxSchemaAlternatives) {
      return Status::InvalidArgument(
          "'tools' has " + std::to_string(alternatives) +
              " enum values and anyOf/oneOf branches in all its functions' parameters; at most " +
              std::to_string(util::kMaxSchemaAlternatives) +
              " (each one is grammar work on every generated token)",
          "tools");
    }
  }
  // tools with response_format: a direct answer follows the format. Under
  // tool_choice required the answer is calls, and the format has nothing to
  // shape; under auto the generic format carries both (tool_calls.h), on
  // any template.
  using Type = engine::ResponseFormat::Type;
  const bool auto_choice = r.tools.choice.mode == ToolChoice::Mode::kAuto;
  std::string response_schema;
  if (r.tools.active() && auto_choice && r.response_format.type == Type::kJsonObject) {
    response_schema = R"({"type":"object"})";
  } else if (r.tools.active() && auto_choice && r.response_format.type == Type::kJsonSchema) {
    response_schema = r.response_format.schema;
  }
  if (!response_schema.empty()) {
    // Refused by its own name and place, not inside the combined schema.
    auto g = e.GrammarFromJsonSchema(response_schema, "response_format.json_schema.schema");
    if (!g.ok()) return g.status();
  }
  const bool generic_tools = r.tools.active() && (!e.NativeToolCalls() || !response_schema.empty());
  if (generic_tools) {
    in.messages = ToolMessages(r.messages, r.tools, response_schema);
    in.response_format.type = Type::kJsonSchema;
    in.response_format.schema = ToolAnswerSchema(r.tools, response_schema);
  } else if (r.tools.active()) {
    in.tools = NativeTools(r.tools);
    in.response_format = engine::ResponseFormat{};
  }
  if (Status st = model.scheduler->Prepare(in, r.ignore_eos, gen); !st.ok()) return st;
  if (generic_tools) {
    // A thinking template's parser (when Prepare set one) splits off the
    // thinking; the generic parser reads the rest.
    gen->answer_parser = GenericToolParser(!response_schema.empty(), std::move(gen->answer_parser));
  }
  return Status::Ok();
}

void LocalTarget::Run(const models::ServedModel& model, scheduler::GenerationRequest gen,
                      const std::shared_ptr<ResponseSink>& sink,
                      std::shared_ptr<ShadowCompare> compare) {
  sink->OnLocalStart(
      LocalAnswerMeta{model.id, model.system_fingerprint, gen.answer_parser, model.version});
  const bool batch = gen.priority == scheduler::Priority::kBatch;
  auto counted = std::make_shared<OutcomeSink>(sink, model.outcomes, batch, std::move(compare), 0);
  if (Status st = model.scheduler->Submit(std::move(gen), counted); !st.ok()) sink->OnError(st);
}

std::shared_ptr<ShadowCompare> LocalTarget::Mirror(const models::ServedModel& served,
                                                   const CompletionCall& call,
                                                   const scheduler::GenerationRequest& gen) const {
  const auto shadow = serving_->ShadowOf(served.id);
  if (shadow == nullptr || shadow.get() == &served) return nullptr;
  // Spare capacity only: the mirror must never delay a real request.
  const auto active = served.scheduler->Snapshot();
  const auto candidate = shadow->scheduler->Snapshot();
  if (active.queued > 0 || active.would_wait || candidate.active + candidate.queued > 0) {
    shadow->outcomes->RecordShadowSkipped();
    return nullptr;
  }
  scheduler::GenerationRequest copy;
  if (Status st = Prepare(*shadow, call, &copy); !st.ok()) {
    // The candidate cannot take what the active version took: a failure of
    // the candidate, counted as one.
    spdlog::info("shadow {}:{}: {}", shadow->id, shadow->version, st.message());
    shadow->outcomes->Record(/*error=*/true, false, false, 0, -1);
    return nullptr;
  }
  copy.id = gen.id + "-shadow";
  copy.priority = scheduler::Priority::kBatch;
  copy.cache_scope = gen.cache_scope;
  const bool greedy = gen.sampling.temperature && *gen.sampling.temperature <= 0.0f;
  auto compare = greedy ? std::make_shared<ShadowCompare>(shadow->outcomes) : nullptr;
  // Timed although batch-class: it runs only on an idle candidate, so its
  // latency is the candidate's own.
  auto dropped =
      std::make_shared<OutcomeSink>(nullptr, shadow->outcomes, /*batch=*/false, compare, 1);
  if (Status st = shadow->scheduler->Submit(std::move(copy), dropped); !st.ok()) {
    shadow->outcomes->RecordShadowSkipped();
    return nullptr;
  }
  return compare;
}

}  // namespace outpost::router

#include "outpost/router/local_target.h"

#include <chrono>

#include "outpost/router/tool_calls.h"
#include "outpost/scheduler/scheduler.h"

namespace outpost::router {
namespace {

// Passes everything on to the client's sink and records how the request
// ended in its version's outcomes (errors, cut, empty, tokens, TTFT).
class OutcomeSink final : public scheduler::GenerationSink {
 public:
  OutcomeSink(std::shared_ptr<ResponseSink> sink, std::shared_ptr<models::VersionOutcomes> out)
      : sink_(std::move(sink)), out_(std::move(out)), start_(std::chrono::steady_clock::now()) {}

  void OnText(int choice, std::string text) override {
    if (ttft_s_ < 0) {
      ttft_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    }
    sink_->OnText(choice, std::move(text));
  }
  void OnLogprobs(int choice, std::vector<scheduler::TokenInfo> tokens) override {
    sink_->OnLogprobs(choice, std::move(tokens));
  }
  void OnDone(scheduler::GenerationResult result) override {
    const bool error = result.finish == scheduler::FinishReason::kError;
    const bool cancelled = result.finish == scheduler::FinishReason::kCancelled;
    out_->Record(error, cancelled, ttft_s_ < 0, result.usage.completion_tokens, ttft_s_);
    sink_->OnDone(std::move(result));
  }
  bool Cancelled() override { return sink_->Cancelled(); }

 private:
  const std::shared_ptr<ResponseSink> sink_;
  const std::shared_ptr<models::VersionOutcomes> out_;
  const std::chrono::steady_clock::time_point start_;
  double ttft_s_ = -1;  // engine thread only
};

}  // namespace

Status LocalTarget::Prepare(const models::ServedModel& model, const CompletionCall& call,
                            scheduler::GenerationRequest* gen) {
  const CompletionRequest& r = call.request;
  gen->id = call.id;
  gen->priority = call.priority;
  gen->sampling = r.sampling;
  gen->max_tokens = r.max_tokens;
  gen->stop = r.stop;
  gen->top_logprobs = r.top_logprobs;
  gen->n = r.n;
  gen->cache_prompt = r.cache_prompt;
  gen->operation = r.endpoint == Endpoint::kChat ? "chat" : "text_completion";
  scheduler::PromptInput in;
  in.chat = r.endpoint == Endpoint::kChat;
  in.messages = r.messages;
  in.text = r.prompt;
  in.tokens = r.prompt_tokens;
  in.response_format = r.response_format;
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
  }
  const bool generic_tools = r.tools.active() && !e.NativeToolCalls();
  if (generic_tools) {
    in.messages = ToolMessages(r.messages, r.tools);
    in.response_format.type = engine::ResponseFormat::Type::kJsonSchema;
    in.response_format.schema = ToolAnswerSchema(r.tools);
  } else if (r.tools.active()) {
    in.tools = NativeTools(r.tools);
  }
  if (Status st = model.scheduler->Prepare(in, r.ignore_eos, gen); !st.ok()) return st;
  if (generic_tools) gen->answer_parser = GenericToolParser();
  return Status::Ok();
}

void LocalTarget::Run(const models::ServedModel& model, scheduler::GenerationRequest gen,
                      const std::shared_ptr<ResponseSink>& sink) {
  sink->OnLocalStart(
      LocalAnswerMeta{model.id, model.system_fingerprint, gen.answer_parser, model.version});
  auto counted = std::make_shared<OutcomeSink>(sink, model.outcomes);
  if (Status st = model.scheduler->Submit(std::move(gen), counted); !st.ok()) sink->OnError(st);
}

}  // namespace outpost::router

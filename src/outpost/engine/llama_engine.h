// LlamaEngine — engine::Engine over llama.cpp: a shared Model (weights,
// vocabulary, chat template), one Context (KV cache for every sequence and the
// batch) and one Sampler per sequence.
//
// Owned by a scheduler::Scheduler. Threads as Engine's: text methods from any
// thread (the Model is immutable after load), decoding on the engine thread.
#pragma once

#include <memory>
#include <vector>

#include "outpost/engine/context.h"
#include "outpost/engine/engine.h"
#include "outpost/engine/model.h"
#include "outpost/engine/sampler.h"

namespace outpost::engine {

class LlamaEngine final : public Engine {
 public:
  // Shares the model so the context is always freed before it.
  LlamaEngine(std::shared_ptr<const Model> model, std::unique_ptr<Context> ctx);
  ~LlamaEngine() override;

  std::vector<Token> Tokenize(std::string_view text, bool add_special,
                              bool parse_special) const override {
    return model_->Tokenize(text, add_special, parse_special);
  }
  StatusOr<ChatPrompt> ApplyChatTemplate(const std::vector<ChatMessage>& m, const ChatTools* tools,
                                         const ChatOptions& options) const override {
    return model_->ApplyChatTemplate(m, tools, options);
  }
  bool NativeToolCalls() const override { return model_->NativeToolCalls(); }
  int32_t SlidingWindow() const override { return model_->SlidingWindow(); }
  const InfillTokens& Infill() const override { return model_->Infill(); }
  const std::vector<Token>& EndOfGenerationTokens() const override {
    return model_->EndOfGenerationTokens();
  }
  bool IsEndOfGeneration(Token t) const override { return model_->IsEndOfGeneration(t); }
  const SamplingDefaults& DefaultSampling() const override { return model_->DefaultSampling(); }
  StatusOr<std::string> GrammarFromJsonSchema(const std::string& schema,
                                              const std::string& param) const override {
    return model_->GrammarFromJsonSchema(schema, param);
  }
  Status CheckGrammar(const std::string& gbnf, const std::string& param) const override {
    return model_->CheckGrammar(gbnf, param);
  }
  std::string TokenPiece(Token t, bool special) const override {
    return model_->TokenPiece(t, special);
  }
  int32_t VocabSize() const override { return model_->VocabSize(); }

  void ClearBatch() override { ctx_->ClearBatch(); }
  int32_t Add(Token token, int32_t pos, SeqId seq, bool want_logits) override {
    return ctx_->Add(token, pos, seq, want_logits);
  }
  int32_t BatchSize() const override { return ctx_->BatchSize(); }
  Status Decode() override { return ctx_->Decode(); }
  Status DecodeInterruptible(const std::atomic<bool>& interrupt) override {
    return ctx_->DecodeInterruptible(interrupt);
  }
  Status StartSequence(SeqId seq, const SamplingParams& params) override;
  Token Sample(SeqId seq, int32_t idx) override;
  // Samplers that need only their logits row (Sampler::RowOnly) run at once
  // on the decode's thread count (the OpenMP team llama.cpp's CPU backend has
  // just used, so no thread is added or woken); the others one by one first.
  void SampleMany(std::span<const SeqId> seqs, std::span<const int32_t> idx,
                  std::span<Token> out) override;
  TokenLogprob TopLogProbs(int32_t idx, Token token, int32_t n_top) const override {
    return ctx_->TopLogProbs(idx, token, n_top);
  }
  void CopySequence(SeqId src, SeqId dst) override { ctx_->CopySequence(src, dst); }
  Status CopyCells(SeqId src, SeqId dst) override { return ctx_->CopyCells(src, dst); }
  Status MoveSequence(SeqId src, SeqId dst) override;
  bool TrimSequence(SeqId seq, int32_t keep) override { return ctx_->TrimSequence(seq, keep); }
  int32_t SequencePosMin(SeqId seq) const override { return ctx_->SequencePosMin(seq); }
  void RemoveSequence(SeqId seq) override;
  Status SaveSequence(SeqId seq, const std::string& path, std::span<const Token> tokens) override {
    return ctx_->SaveSequence(seq, path, tokens);
  }
  StatusOr<std::vector<Token>> LoadSequence(SeqId seq, const std::string& path,
                                            size_t max_tokens) override {
    return ctx_->LoadSequence(seq, path, max_tokens);
  }
  uint64_t KvBytesAllocated() const override { return ctx_->KvBytesAllocated(); }

  const Model& model() const { return *model_; }
  const Context& context() const { return *ctx_; }

 private:
  const std::shared_ptr<const Model> model_;
  std::unique_ptr<Context> ctx_;
  std::vector<std::unique_ptr<Sampler>> samplers_;  // by sequence id
  int threads_ = 1;                                 // SampleMany's team
  std::vector<size_t> row_only_;                    // SampleMany: indices
  std::vector<const float*> rows_;                  // SampleMany: their rows
};

}  // namespace outpost::engine

#include "outpost/engine/llama_engine.h"

namespace outpost::engine {

LlamaEngine::LlamaEngine(std::shared_ptr<const Model> model, std::unique_ptr<Context> ctx)
    : model_(std::move(model)), ctx_(std::move(ctx)) {
  samplers_.resize(static_cast<size_t>(ctx_->options().sessions));
}

LlamaEngine::~LlamaEngine() {
  samplers_.clear();
  ctx_.reset();  // before the model it was created from
}

Status LlamaEngine::StartSequence(SeqId seq, const SamplingParams& params) {
  auto s = Sampler::Create(*model_, params);
  if (!s.ok()) return s.status();
  samplers_[static_cast<size_t>(seq)] = std::move(s).value();
  return Status::Ok();
}

Token LlamaEngine::Sample(SeqId seq, int32_t idx) {
  return samplers_[static_cast<size_t>(seq)]->Sample(*ctx_, idx);
}

void LlamaEngine::RemoveSequence(SeqId seq) {
  ctx_->RemoveSequence(seq);
  samplers_[static_cast<size_t>(seq)].reset();
}

}  // namespace outpost::engine

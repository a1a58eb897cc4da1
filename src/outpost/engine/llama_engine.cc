#include "outpost/engine/llama_engine.h"

#include <llama.h>

#include <algorithm>

namespace outpost::engine {

LlamaEngine::LlamaEngine(std::shared_ptr<const Model> model, std::unique_ptr<Context> ctx)
    : model_(std::move(model)), ctx_(std::move(ctx)) {
  samplers_.resize(static_cast<size_t>(ctx_->options().sessions));
  threads_ = ctx_->Threads();
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

void LlamaEngine::SampleMany(std::span<const SeqId> seqs, std::span<const int32_t> idx,
                             std::span<Token> out) {
  // On the engine thread: the general path's sequences, and the rows of the
  // others (llama_get_logits_ith also synchronises the context).
  row_only_.clear();
  rows_.clear();
  for (size_t i = 0; i < seqs.size(); ++i) {
    Sampler& s = *samplers_[static_cast<size_t>(seqs[i])];
    if (!s.RowOnly()) {
      out[i] = s.Sample(*ctx_, idx[i]);
      continue;
    }
    row_only_.push_back(i);
    rows_.push_back(llama_get_logits_ith(ctx_->raw(), idx[i]));
  }
  const int n = static_cast<int>(row_only_.size());
#pragma omp parallel for if (n >= 2 && threads_ > 1) num_threads(threads_) schedule(dynamic, 1)
  for (int k = 0; k < n; ++k) {
    const size_t i = row_only_[static_cast<size_t>(k)];
    out[i] = samplers_[static_cast<size_t>(seqs[i])]->SampleRow(rows_[static_cast<size_t>(k)]);
  }
}

Status LlamaEngine::MoveSequence(SeqId src, SeqId dst) {
  if (Status st = ctx_->CopyCells(src, dst); !st.ok()) return st;
  samplers_[static_cast<size_t>(dst)] = std::move(samplers_[static_cast<size_t>(src)]);
  return Status::Ok();
}

void LlamaEngine::RemoveSequence(SeqId seq) {
  ctx_->RemoveSequence(seq);
  samplers_[static_cast<size_t>(seq)].reset();
}

}  // namespace outpost::engine

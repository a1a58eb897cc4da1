#include "outpost/engine/llama_engine.h"

#include <llama.h>

#include <algorithm>
#include <thread>

namespace outpost::engine {

LlamaEngine::LlamaEngine(std::shared_ptr<const Model> model, std::unique_ptr<Context> ctx)
    : model_(std::move(model)), ctx_(std::move(ctx)) {
  samplers_.resize(static_cast<size_t>(ctx_->options().sessions));
  const int32_t n = ctx_->options().n_threads;
  threads_ = n > 0 ? n : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
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
  row_only_.clear();
  rows_.clear();
  for (size_t i = 0; i < seqs.size(); ++i) {
    Sampler& s = *samplers_[static_cast<size_t>(seqs[i])];
    if (!s.RowOnly()) continue;
    row_only_.push_back(i);
    // Here, on the engine thread: llama_get_logits_ith also synchronises.
    rows_.push_back(llama_get_logits_ith(ctx_->raw(), idx[i]));
  }
  const int n = static_cast<int>(row_only_.size());
  if (n >= 2 && threads_ > 1) {
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 1)
    for (int k = 0; k < n; ++k) {
      const size_t i = row_only_[static_cast<size_t>(k)];
      out[i] = samplers_[static_cast<size_t>(seqs[i])]->SampleRow(rows_[static_cast<size_t>(k)]);
    }
  } else {
    for (int k = 0; k < n; ++k) {
      const size_t i = row_only_[static_cast<size_t>(k)];
      out[i] = samplers_[static_cast<size_t>(seqs[i])]->SampleRow(rows_[static_cast<size_t>(k)]);
    }
  }
  for (size_t i = 0, k = 0; i < seqs.size(); ++i) {
    if (k < row_only_.size() && row_only_[k] == i) {
      ++k;
      continue;
    }
    out[i] = samplers_[static_cast<size_t>(seqs[i])]->Sample(*ctx_, idx[i]);
  }
}

void LlamaEngine::RemoveSequence(SeqId seq) {
  ctx_->RemoveSequence(seq);
  samplers_[static_cast<size_t>(seq)].reset();
}

}  // namespace outpost::engine

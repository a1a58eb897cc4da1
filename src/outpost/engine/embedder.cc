#include "outpost/engine/embedder.h"

#include <llama-ext.h>
#include <llama.h>

#include <cmath>

#include "outpost/util/cpus.h"

namespace outpost::engine {

StatusOr<std::unique_ptr<Embedder>> Embedder::Create(std::shared_ptr<const Model> model,
                                                     int32_t max_tokens, int32_t n_threads) {
  llama_context_params cp = llama_context_default_params();
  cp.n_seq_max = 1;
  cp.n_ctx = static_cast<uint32_t>(max_tokens);
  // Mean pooling needs the whole input in one physical batch.
  cp.n_batch = static_cast<uint32_t>(max_tokens);
  cp.n_ubatch = static_cast<uint32_t>(max_tokens);
  const int threads = n_threads > 0 ? n_threads : util::UsableCpus().usable;
  cp.n_threads = threads;
  cp.n_threads_batch = threads;
  cp.embeddings = true;
  cp.pooling_type = LLAMA_POOLING_TYPE_MEAN;
  cp.no_perf = true;
  llama_context* ctx = llama_init_from_model(model->raw(), cp);
  if (ctx == nullptr) {
    return Status::ResourceExhausted("llama.cpp could not create an embeddings context of " +
                                     std::to_string(max_tokens) + " tokens");
  }
  std::unique_ptr<Embedder> e(new Embedder());
  e->model_ = std::move(model);
  e->ctx_ = ctx;
  e->n_embd_ = llama_model_n_embd(e->model_->raw());
  e->max_tokens_ = max_tokens;
  for (const auto& [buft, mb] : llama_get_memory_breakdown(ctx)) {
    e->allocated_bytes_ += mb.context + mb.compute;
  }
  return e;
}

Embedder::~Embedder() {
  if (ctx_) llama_free(ctx_);
}

StatusOr<std::vector<float>> Embedder::Embed(const std::vector<Token>& tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  llama_batch batch = llama_batch_init(static_cast<int32_t>(tokens.size()), 0, 1);
  for (size_t i = 0; i < tokens.size(); ++i) {
    batch.token[i] = tokens[i];
    batch.pos[i] = static_cast<llama_pos>(i);
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = 1;
  }
  batch.n_tokens = static_cast<int32_t>(tokens.size());
  llama_memory_clear(llama_get_memory(ctx_), true);
  const int32_t rc = llama_decode(ctx_, batch);
  llama_batch_free(batch);
  if (rc != 0)
    return Status::Internal("embedding failed: llama_decode returned " + std::to_string(rc));
  const float* v = llama_get_embeddings_seq(ctx_, 0);
  if (v == nullptr) return Status::Internal("embedding failed: no pooled embedding");
  std::vector<float> out(v, v + n_embd_);
  double norm = 0;
  for (float x : out) norm += static_cast<double>(x) * x;
  norm = std::sqrt(norm);
  if (norm > 0) {
    for (float& x : out) x = static_cast<float>(x / norm);
  }
  return out;
}

}  // namespace outpost::engine

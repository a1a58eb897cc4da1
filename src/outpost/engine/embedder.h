// Embedder — sentence embeddings from a loaded model: its own llama.cpp
// context (embeddings on, mean pooling over the input's tokens, as llama.cpp
// does it), one input at a time, L2-normalised.
//
// Owned by a models::EmbeddingService. Embed() is serialised internally (one
// context), and runs on the caller's thread. The context's memory is
// allocated once at Create().
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "outpost/engine/context.h"
#include "outpost/engine/model.h"
#include "outpost/engine/types.h"
#include "outpost/util/status.h"

struct llama_context;

namespace outpost::engine {

class Embedder {
 public:
  // max_tokens: the longest input (one physical batch). Errors:
  // ResourceExhausted when llama.cpp cannot create the context.
  static StatusOr<std::unique_ptr<Embedder>> Create(std::shared_ptr<const Model> model,
                                                    int32_t max_tokens, int32_t n_threads);
  ~Embedder();
  Embedder(const Embedder&) = delete;
  Embedder& operator=(const Embedder&) = delete;

  // The unit-length mean-pooled embedding of `tokens`. REQUIRES: 1 ≤
  // tokens.size() ≤ max_tokens() (callers check, naming the input).
  // Errors: Internal when llama.cpp fails.
  StatusOr<std::vector<float>> Embed(const std::vector<Token>& tokens);

  int32_t dimensions() const { return n_embd_; }
  int32_t max_tokens() const { return max_tokens_; }
  // Bytes llama.cpp allocated for this context (KV, compute).
  uint64_t allocated_bytes() const { return allocated_bytes_; }

 private:
  Embedder() = default;
  std::shared_ptr<const Model> model_;
  llama_context* ctx_ = nullptr;
  int32_t n_embd_ = 0;
  int32_t max_tokens_ = 0;
  uint64_t allocated_bytes_ = 0;
  std::mutex mu_;
};

}  // namespace outpost::engine

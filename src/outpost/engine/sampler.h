// Sampler — one request's token sampler (llama.cpp sampler chain) built from
// SamplingParams: logit bias → penalties → top-k → top-p → min-p →
// temperature → seeded draw; greedy when temperature is 0.
//
// Greedy requests without penalties take a fast path: argmax straight over the
// logits row (bias applied on the fly) instead of materialising a candidate
// array of the whole vocabulary; same token, same tie-breaking (lowest id).
//
// Owned by a scheduler slot; engine thread only.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "outpost/engine/context.h"
#include "outpost/engine/model.h"
#include "outpost/engine/types.h"

struct llama_sampler;

namespace outpost::engine {

class Sampler {
 public:
  Sampler(const Model& model, const SamplingParams& params);
  // Test hook: the same sampler without the greedy fast path (llama.cpp chain).
  static std::unique_ptr<Sampler> WithoutFastPathForTest(const Model& model,
                                                         const SamplingParams& params);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Samples from the logits at batch index `idx` of the last decode and
  // records the token for the penalties.
  Token Sample(Context& ctx, int32_t idx);

  // Feeds prompt tokens into the penalty history (OpenAI penalties count only
  // generated text, so the scheduler does not call this for prompts).
  void Accept(Token token);

 private:
  Sampler(const Model& model, const SamplingParams& params, bool allow_fast_path);
  Token Argmax(const float* logits) const;

  llama_sampler* chain_ = nullptr;
  bool fast_greedy_ = false;
  int32_t n_vocab_ = 0;
  std::vector<uint8_t> biased_;                // fast path: 1 where a bias applies
  std::vector<std::pair<Token, float>> bias_;  // fast path: sorted by token
};

}  // namespace outpost::engine

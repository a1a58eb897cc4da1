// Sampler — one request's token sampler (llama.cpp sampler chain) built from
// SamplingParams: logit bias → penalties → top-k → top-p → min-p →
// temperature → seeded draw; greedy when temperature is 0.
//
// Owned by a scheduler slot; engine thread only.
#pragma once

#include <memory>

#include "outpost/engine/context.h"
#include "outpost/engine/model.h"
#include "outpost/engine/types.h"

struct llama_sampler;

namespace outpost::engine {

class Sampler {
 public:
  Sampler(const Model& model, const SamplingParams& params);
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
  llama_sampler* chain_ = nullptr;
};

}  // namespace outpost::engine

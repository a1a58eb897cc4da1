// Sampler — one request's token sampler, built from resolved SamplingParams.
//
// The general path is llama.cpp's common_sampler: logit bias → penalties →
// top-k → top-p → min-p → temperature → seeded draw, and, when the request has
// a grammar, grammar-constrained sampling by rejection (the sampled token is
// checked against the grammar; only when it does not fit is the grammar
// applied to the whole vocabulary and the token drawn again).
//
// Two rules keep sampling cheap on large vocabularies:
//   * top_k 0 ("off") with top_p or min_p active is capped at kTopKCap
//     candidates, so top-p never sorts a 262k-entry vocabulary;
//   * greedy requests without penalties or grammar take a fast path: argmax
//     straight over the logits row (bias applied on the fly); same token, same
//     tie-breaking (lowest id) as llama.cpp's greedy sampler.
//
// Owned by the engine, one per sequence; engine thread only.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "outpost/engine/context.h"
#include "outpost/engine/model.h"
#include "outpost/engine/types.h"
#include "outpost/util/status.h"

struct common_sampler;

namespace outpost::engine {

// The most candidates top-p and min-p look at when top_k is 0.
inline constexpr int32_t kTopKCap = 1000;

class Sampler {
 public:
  // Unset knobs in `params` take kBuiltin defaults (callers resolve them
  // against the model's defaults first). Errors: InvalidArgument naming
  // "grammar" when the grammar does not parse.
  static StatusOr<std::unique_ptr<Sampler>> Create(const Model& model,
                                                   const SamplingParams& params);
  // Test hook: the same sampler without the greedy fast path (llama.cpp chain).
  static std::unique_ptr<Sampler> WithoutFastPathForTest(const Model& model,
                                                         const SamplingParams& params);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Samples from the logits at batch index `idx` of the last decode and
  // records the token (penalty history, grammar state).
  Token Sample(Context& ctx, int32_t idx);

 private:
  Sampler() = default;
  static StatusOr<std::unique_ptr<Sampler>> Build(const Model& model, const SamplingParams& params,
                                                  bool allow_fast_path);
  Token Argmax(const float* logits) const;

  common_sampler* common_ = nullptr;
  bool fast_greedy_ = false;
  int32_t n_vocab_ = 0;
  std::vector<uint8_t> biased_;                // fast path: 1 where a bias applies
  std::vector<std::pair<Token, float>> bias_;  // fast path: sorted by token
};

}  // namespace outpost::engine

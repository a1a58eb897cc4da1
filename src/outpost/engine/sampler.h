// Sampler — one request's token sampler, built from resolved SamplingParams.
//
// The general path is llama.cpp's common_sampler: logit bias → penalties →
// top-k → top-p → min-p → temperature → seeded draw, and, when the request has
// a grammar, grammar-constrained sampling by rejection (the sampled token is
// checked against the grammar; only when it does not fit is the grammar
// applied to the whole vocabulary and the token drawn again). Under a
// grammar a logit_bias of -100 is a penalty, not a ban, so the grammar's
// structure wins where it allows nothing else.
//
// Three rules keep sampling cheap on large vocabularies:
//   * top_k 0 ("off") with top_p or min_p active is capped at kTopKCap
//     candidates, so top-p never sorts a 262k-entry vocabulary;
//   * greedy requests without penalties or grammar take a fast path: argmax
//     straight over the logits row (bias applied on the fly); same token, same
//     tie-breaking (lowest id) as llama.cpp's greedy sampler;
//   * requests with a top-k cut (≤ kTopKCap) and no penalties or grammar take
//     the top-k path: one pass over the row keeps the k best candidates (logit
//     bias and the model's suppressed tokens counted), and llama.cpp's own
//     chain (the same samplers, the same seeded draw) runs on those k instead
//     of on a 262k-entry array it would cut to the same k first. The token
//     drawn is the one the full chain draws (ties between equal logits aside).
//
// Those two paths read nothing but the logits row (RowOnly()), so the engine
// may run several sequences' samplers at once (SampleRow on other threads);
// otherwise owned by the engine, one per sequence, engine thread only.
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
  // The reference for the row-only paths (tests, bench/sampler_cost): llama.cpp's
  // chain over the whole row, as the general path runs it (no grammar).
  // REQUIRES: a sampler from WithoutFastPathForTest.
  Token SampleWholeRow(const float* logits);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Samples from the logits at batch index `idx` of the last decode and
  // records the token (penalty history, grammar state); kNoToken, recording
  // nothing, when the grammar allows no token (with a ban from logit_bias,
  // or a grammar that dead-ends); kGrammarTooAmbiguous when llama.cpp's
  // grammar engine passed its bounds (Outpost's patch to it; the sampler's
  // grammar state is then unusable).
  Token Sample(Context& ctx, int32_t idx);

  // True when sampling needs only the logits row: the greedy fast path or the
  // top-k path (see above).
  bool RowOnly() const { return fast_greedy_ || top_k_ > 0; }
  // Sample() from a row of VocabSize() logits. REQUIRES: RowOnly(). Safe on
  // any thread while no other thread uses this sampler.
  Token SampleRow(const float* logits);

 private:
  Sampler() = default;
  static StatusOr<std::unique_ptr<Sampler>> Build(const Model& model, const SamplingParams& params,
                                                  bool allow_fast_path);
  // Row-only paths: keeps `bias` (any order, a token may repeat) for
  // Biased() and marks its tokens in biased_.
  void UseBias(std::vector<std::pair<Token, float>> bias);
  Token Argmax(const float* logits) const;
  Token SampleTopK(const float* logits);
  float Biased(const float* logits, Token t) const;

  common_sampler* common_ = nullptr;
  bool grammar_ = false;  // the request has a grammar (Sample may give kNoToken)
  bool fast_greedy_ = false;
  int32_t top_k_ = 0;  // > 0: the top-k path, with this k
  int32_t n_vocab_ = 0;
  // Row-only paths: 1 where a bias applies (empty: none does), and the biases
  // sorted by token (the top-k path adds the model's suppressed tokens).
  std::vector<uint8_t> biased_;
  std::vector<std::pair<Token, float>> bias_;
  size_t n_bias_tokens_ = 0;                   // distinct tokens in bias_
  std::vector<std::pair<float, Token>> heap_;  // top-k path: the best so far
};

}  // namespace outpost::engine

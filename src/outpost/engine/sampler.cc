#include "outpost/engine/sampler.h"

#include <llama.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace outpost::engine {

Sampler::Sampler(const Model& model, const SamplingParams& p) : Sampler(model, p, true) {}

std::unique_ptr<Sampler> Sampler::WithoutFastPathForTest(const Model& model,
                                                         const SamplingParams& p) {
  return std::unique_ptr<Sampler>(new Sampler(model, p, false));
}

Sampler::Sampler(const Model& model, const SamplingParams& p, bool allow_fast_path) {
  const int32_t n_vocab = model.VocabSize();
  n_vocab_ = n_vocab;
  const bool penalties =
      p.repeat_penalty != 1.0f || p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f;
  if (allow_fast_path && p.temperature <= 0.0f && !penalties) {
    fast_greedy_ = true;
    if (!p.logit_bias.empty()) {
      biased_.assign(static_cast<size_t>(n_vocab), 0);
      for (const auto& [tok, b] : p.logit_bias) {
        biased_[static_cast<size_t>(tok)] = 1;
        bias_.emplace_back(tok, b <= -100.0f ? -INFINITY : b);
      }
      std::sort(bias_.begin(), bias_.end());
    }
    return;
  }
  chain_ = llama_sampler_chain_init(llama_sampler_chain_default_params());
  if (!p.logit_bias.empty()) {
    std::vector<llama_logit_bias> bias;
    bias.reserve(p.logit_bias.size());
    for (const auto& [tok, b] : p.logit_bias) {
      // OpenAI: -100 effectively bans, +100 effectively forces.
      const float v = b <= -100.0f ? -INFINITY : b;
      bias.push_back({tok, v});
    }
    llama_sampler_chain_add(chain_, llama_sampler_init_logit_bias(
                                        n_vocab, static_cast<int32_t>(bias.size()), bias.data()));
  }
  if (p.repeat_penalty != 1.0f || p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f) {
    llama_sampler_chain_add(
        chain_, llama_sampler_init_penalties(n_vocab, p.penalty_last_n, p.repeat_penalty,
                                             p.frequency_penalty, p.presence_penalty));
  }
  if (p.temperature <= 0.0f) {
    llama_sampler_chain_add(chain_, llama_sampler_init_greedy());
    return;
  }
  if (p.top_k > 0) llama_sampler_chain_add(chain_, llama_sampler_init_top_k(p.top_k));
  if (p.top_p < 1.0f) llama_sampler_chain_add(chain_, llama_sampler_init_top_p(p.top_p, 1));
  if (p.min_p > 0.0f) llama_sampler_chain_add(chain_, llama_sampler_init_min_p(p.min_p, 1));
  llama_sampler_chain_add(chain_, llama_sampler_init_temp(p.temperature));
  const uint32_t seed = p.has_seed ? p.seed : std::random_device{}();
  llama_sampler_chain_add(chain_, llama_sampler_init_dist(seed));
}

Sampler::~Sampler() {
  if (chain_) llama_sampler_free(chain_);
}

Token Sampler::Sample(Context& ctx, int32_t idx) {
  if (fast_greedy_) return Argmax(llama_get_logits_ith(ctx.raw(), idx));
  // llama_sampler_sample also accepts the token into the chain.
  return llama_sampler_sample(chain_, ctx.raw(), idx);
}

Token Sampler::Argmax(const float* logits) const {
  Token best = 0;
  float best_v = -INFINITY;
  if (biased_.empty()) {
    for (Token i = 0; i < n_vocab_; ++i) {
      if (logits[i] > best_v) {
        best_v = logits[i];
        best = i;
      }
    }
    return best;
  }
  for (Token i = 0; i < n_vocab_; ++i) {
    float v = logits[i];
    if (biased_[static_cast<size_t>(i)]) {
      // Same token may be listed twice; like llama.cpp, biases add up.
      auto it = std::lower_bound(bias_.begin(), bias_.end(), std::make_pair(i, -INFINITY));
      for (; it != bias_.end() && it->first == i; ++it) v += it->second;
    }
    if (v > best_v) {
      best_v = v;
      best = i;
    }
  }
  return best;
}

void Sampler::Accept(Token token) {
  if (chain_) llama_sampler_accept(chain_, token);
}

}  // namespace outpost::engine

#include "outpost/engine/sampler.h"

#include <llama.h>
#include <sampling.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <random>
#include <vector>

namespace outpost::engine {
namespace {

// GrammarTrigger::Type mirrors llama.cpp's enum value for value.
static_assert(static_cast<int>(GrammarTrigger::Type::kToken) == COMMON_GRAMMAR_TRIGGER_TYPE_TOKEN);
static_assert(static_cast<int>(GrammarTrigger::Type::kWord) == COMMON_GRAMMAR_TRIGGER_TYPE_WORD);
static_assert(static_cast<int>(GrammarTrigger::Type::kPattern) ==
              COMMON_GRAMMAR_TRIGGER_TYPE_PATTERN);
static_assert(static_cast<int>(GrammarTrigger::Type::kPatternFull) ==
              COMMON_GRAMMAR_TRIGGER_TYPE_PATTERN_FULL);

}  // namespace

StatusOr<std::unique_ptr<Sampler>> Sampler::Create(const Model& model, const SamplingParams& p) {
  return Build(model, p, true);
}

std::unique_ptr<Sampler> Sampler::WithoutFastPathForTest(const Model& model,
                                                         const SamplingParams& p) {
  auto s = Build(model, p, false);
  return s.ok() ? std::move(s).value() : nullptr;
}

StatusOr<std::unique_ptr<Sampler>> Sampler::Build(const Model& model, const SamplingParams& req,
                                                  bool allow_fast_path) {
  const SamplingParams p = ResolveSampling(req, SamplingDefaults{});
  std::unique_ptr<Sampler> s(new Sampler());
  const int32_t n_vocab = model.VocabSize();
  s->n_vocab_ = n_vocab;
  const bool penalties =
      *p.repeat_penalty != 1.0f || p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f;
  if (allow_fast_path && *p.temperature <= 0.0f && !penalties && p.grammar.empty()) {
    s->fast_greedy_ = true;
    if (!p.logit_bias.empty()) {
      s->biased_.assign(static_cast<size_t>(n_vocab), 0);
      for (const auto& [tok, b] : p.logit_bias) {
        s->biased_[static_cast<size_t>(tok)] = 1;
        s->bias_.emplace_back(tok, b <= -100.0f ? -INFINITY : b);
      }
      std::sort(s->bias_.begin(), s->bias_.end());
    }
    return s;
  }
  common_params_sampling cp;
  cp.no_perf = true;
  cp.seed = p.has_seed ? p.seed : std::random_device{}();
  cp.temp = *p.temperature;
  cp.top_p = *p.top_p;
  cp.min_p = *p.min_p;
  cp.top_k = *p.top_k;
  if (cp.top_k <= 0 && (cp.top_p < 1.0f || cp.min_p > 0.0f)) cp.top_k = kTopKCap;
  cp.penalty_repeat = *p.repeat_penalty;
  cp.penalty_freq = p.frequency_penalty;
  cp.penalty_present = p.presence_penalty;
  cp.penalty_last_n = p.penalty_last_n;
  for (const auto& [tok, b] : p.logit_bias) {
    // OpenAI: -100 effectively bans, +100 effectively forces.
    cp.logit_bias.push_back({tok, b <= -100.0f ? -INFINITY : b});
  }
  if (!p.grammar.empty()) {
    // A tool-call grammar starts with the assistant prefix already in the
    // prompt; llama.cpp feeds that prefix to it only for this grammar type.
    const bool tool_grammar = p.grammar_lazy || !p.grammar_prefix.empty();
    cp.grammar = common_grammar(
        tool_grammar ? COMMON_GRAMMAR_TYPE_TOOL_CALLS : COMMON_GRAMMAR_TYPE_USER, p.grammar);
    cp.grammar_lazy = p.grammar_lazy;
    cp.generation_prompt = p.grammar_prefix;
    for (const auto& t : p.grammar_triggers) {
      cp.grammar_triggers.push_back(
          {static_cast<common_grammar_trigger_type>(t.type), t.value, t.token});
    }
  }
  try {
    s->common_ = common_sampler_init(model.raw(), cp);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string("the grammar cannot be used: ") + e.what(),
                                   "grammar");
  }
  if (s->common_ == nullptr) {
    return Status::InvalidArgument("the grammar cannot be used", "grammar");
  }
  return s;
}

Sampler::~Sampler() {
  if (common_) common_sampler_free(common_);
}

Token Sampler::Sample(Context& ctx, int32_t idx) {
  if (fast_greedy_) return Argmax(llama_get_logits_ith(ctx.raw(), idx));
  const Token t = common_sampler_sample(common_, ctx.raw(), idx);
  common_sampler_accept(common_, t, /*is_generated=*/true);
  return t;
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

}  // namespace outpost::engine

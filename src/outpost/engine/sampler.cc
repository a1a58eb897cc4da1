#include "outpost/engine/sampler.h"

#include <common.h>
#include <llama.h>
#include <sampling.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <random>
#include <vector>

#include "outpost/engine/grammar_limits.h"

namespace outpost::engine {
namespace {

// GrammarTrigger::Type mirrors llama.cpp's enum value for value.
static_assert(static_cast<int>(GrammarTrigger::Type::kToken) == COMMON_GRAMMAR_TRIGGER_TYPE_TOKEN);
static_assert(static_cast<int>(GrammarTrigger::Type::kWord) == COMMON_GRAMMAR_TRIGGER_TYPE_WORD);
static_assert(static_cast<int>(GrammarTrigger::Type::kPattern) ==
              COMMON_GRAMMAR_TRIGGER_TYPE_PATTERN);
static_assert(static_cast<int>(GrammarTrigger::Type::kPatternFull) ==
              COMMON_GRAMMAR_TRIGGER_TYPE_PATTERN_FULL);

// One bias per token, in token order: OpenAI's -100 bans (-inf), and biases
// listed twice for a token add up. Merged here because llama.cpp's logit-bias
// sampler adds every listed bias on a whole-vocabulary array but only the
// first one per token on a cut candidate array (the top-k path's).
// -100 bans a token (-inf), except under a grammar: there it stays a -100
// penalty, so when the grammar allows nothing but banned tokens (the end of
// generation once a JSON answer is complete, with ignore_eos) the grammar
// wins instead of leaving no token to draw.
std::vector<std::pair<Token, float>> MergedBias(const std::vector<std::pair<Token, float>>& in,
                                                bool ban) {
  std::vector<std::pair<Token, float>> out;
  for (const auto& [tok, b] : in) out.emplace_back(tok, ban && b <= -100.0f ? -INFINITY : b);
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  size_t n = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (n > 0 && out[n - 1].first == out[i].first) {
      out[n - 1].second += out[i].second;
    } else {
      out[n++] = out[i];
    }
  }
  out.resize(n);
  return out;
}

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
  const std::vector<std::pair<Token, float>> bias =
      MergedBias(p.logit_bias, /*ban=*/p.grammar.empty());
  // llama.cpp's reasoning-budget sampler watches the thinking block: it
  // limits it, and keeps a lazy grammar out of it.
  const bool watch_thinking = !p.thinking.start.empty() && !p.thinking.end.empty() &&
                              (*p.thinking_budget >= 0 || p.grammar_lazy);
  if (allow_fast_path && *p.temperature <= 0.0f && !penalties && p.grammar.empty() &&
      !watch_thinking) {
    s->fast_greedy_ = true;
    s->UseBias(bias);
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
  // OpenAI: -100 effectively bans, +100 effectively forces.
  for (const auto& [tok, b] : bias) cp.logit_bias.push_back({tok, b});
  if (!p.grammar.empty()) {
    Status limits = CheckGrammarText(p.grammar, "grammar");
    if (!limits.ok()) return limits;
    // A tool-call grammar starts with the assistant prefix already in the
    // prompt; llama.cpp feeds that prefix to it only for this grammar type.
    const bool tool_grammar = p.grammar_lazy || !p.grammar_prefix.empty();
    cp.grammar = common_grammar(
        tool_grammar ? COMMON_GRAMMAR_TYPE_TOOL_CALLS : COMMON_GRAMMAR_TYPE_USER, p.grammar);
    cp.grammar_lazy = p.grammar_lazy;
    s->grammar_ = true;
    cp.generation_prompt = p.grammar_prefix;
    for (const auto& t : p.grammar_triggers) {
      cp.grammar_triggers.push_back(
          {static_cast<common_grammar_trigger_type>(t.type), t.value, t.token});
    }
  }
  if (watch_thinking) {
    const llama_vocab* vocab = llama_model_get_vocab(model.raw());
    cp.reasoning_budget_tokens = *p.thinking_budget;  // -1: none, the block only watched
    cp.reasoning_budget_start = common_tokenize(vocab, p.thinking.start, false, true);
    const llama_tokens end = common_tokenize(vocab, p.thinking.end, false, true);
    cp.reasoning_budget_end = {end};
    cp.reasoning_budget_forced =
        common_tokenize(vocab, p.thinking_budget_message + p.thinking.end, false, true);
    // The sampler starts inside a block the prompt opened; a tool grammar's
    // prefix (the whole assistant prefix) ends with its opening tag then.
    if (p.thinking.open && cp.generation_prompt.empty()) cp.generation_prompt = p.thinking.start;
  }
  try {
    s->common_ = common_sampler_init(model.raw(), cp);
  } catch (const std::exception& e) {
    if (IsGrammarTooAmbiguous(e)) return GrammarTooAmbiguous("grammar");
    // llama.cpp prints the parser's reason to stderr, not into the exception.
    return Status::InvalidArgument(
        std::string("the grammar cannot be used: ") + e.what() +
            " (llama.cpp's grammar parser refused it; the usual cause is a repeated item "
            "whose rules times its count exceed " +
            std::to_string(kMaxGrammarRepetitions) +
            ": lower maxItems, maxLength or a pattern's {m,n}, or simplify the items)",
        "grammar");
  }
  if (s->common_ == nullptr) {
    return Status::InvalidArgument("the grammar cannot be used", "grammar");
  }
  // The top-k path: the chain's other samplers are off at their defaults
  // (DRY, XTC, typical, top-n-sigma, mirostat are never set here), so after
  // the logit bias and the top-k cut it sees exactly the k best candidates.
  if (allow_fast_path && p.grammar.empty() && !penalties && !watch_thinking && cp.top_k > 0 &&
      cp.top_k <= kTopKCap) {
    s->top_k_ = cp.top_k;
    // The chain also bans the model's suppressed tokens (llama.cpp adds them
    // to its logit bias); a ban on a banned token changes nothing.
    std::vector<std::pair<Token, float>> with_suppressed = bias;
    int32_t n_suppress = 0;
    const llama_token* suppress =
        llama_vocab_get_suppress_tokens(llama_model_get_vocab(model.raw()), &n_suppress);
    for (int32_t i = 0; i < n_suppress; ++i) with_suppressed.emplace_back(suppress[i], -INFINITY);
    s->UseBias(std::move(with_suppressed));
    s->heap_.reserve(static_cast<size_t>(cp.top_k) + s->n_bias_tokens_);
  }
  return s;
}

Sampler::~Sampler() {
  if (common_) common_sampler_free(common_);
}

Token Sampler::Sample(Context& ctx, int32_t idx) {
  if (RowOnly()) return SampleRow(llama_get_logits_ith(ctx.raw(), idx));
  Token t = kNoToken;
  try {
    t = common_sampler_sample(common_, ctx.raw(), idx);
  } catch (const std::exception& e) {
    // Only the grammar throws here (its bounds; see grammar_limits.h).
    return IsGrammarTooAmbiguous(e) ? kGrammarTooAmbiguous : kNoToken;
  }
  if (!grammar_) {
    common_sampler_accept(common_, t, /*is_generated=*/true);
    return t;
  }
  // A grammar that allows no token leaves every candidate at -inf and the
  // draw picks one anyway; accepting it would throw (or, for an end of
  // generation token, abort) inside llama.cpp.
  const llama_token_data_array* cur = common_sampler_get_candidates(common_, /*do_sort=*/false);
  if (cur->selected < 0 || static_cast<size_t>(cur->selected) >= cur->size ||
      !(cur->data[cur->selected].logit > -INFINITY)) {
    return kNoToken;
  }
  try {
    common_sampler_accept(common_, t, /*is_generated=*/true);
  } catch (const std::exception& e) {
    return IsGrammarTooAmbiguous(e) ? kGrammarTooAmbiguous : kNoToken;
  }
  return t;
}

Token Sampler::SampleWholeRow(const float* logits) {
  std::vector<llama_token_data> cur(static_cast<size_t>(n_vocab_));
  for (Token t = 0; t < n_vocab_; ++t) cur[static_cast<size_t>(t)] = {t, logits[t], 0.0f};
  llama_token_data_array arr{cur.data(), cur.size(), -1, false};
  llama_sampler_apply(common_sampler_get(common_), &arr);
  const Token tok = arr.data[arr.selected].id;
  common_sampler_accept(common_, tok, /*is_generated=*/true);
  return tok;
}

Token Sampler::SampleRow(const float* logits) {
  return fast_greedy_ ? Argmax(logits) : SampleTopK(logits);
}

void Sampler::UseBias(std::vector<std::pair<Token, float>> bias) {
  if (bias.empty()) return;
  bias_ = std::move(bias);
  std::sort(bias_.begin(), bias_.end());
  biased_.assign(static_cast<size_t>(n_vocab_), 0);
  for (const auto& [tok, b] : bias_) {
    n_bias_tokens_ += biased_[static_cast<size_t>(tok)] == 0;
    biased_[static_cast<size_t>(tok)] = 1;
  }
}

float Sampler::Biased(const float* logits, Token t) const {
  float v = logits[t];
  // Same token may be listed twice; like llama.cpp, biases add up.
  auto it = std::lower_bound(bias_.begin(), bias_.end(), std::make_pair(t, -INFINITY));
  for (; it != bias_.end() && it->first == t; ++it) v += it->second;
  return v;
}

Token Sampler::Argmax(const float* logits) const {
  if (!biased_.empty()) {
    Token best = 0;
    float best_v = -INFINITY;
    for (Token i = 0; i < n_vocab_; ++i) {
      const float v = biased_[static_cast<size_t>(i)] ? Biased(logits, i) : logits[i];
      if (v > best_v) {
        best_v = v;
        best = i;
      }
    }
    return best;
  }
  // Two passes the compiler vectorises: the largest value (eight independent
  // lanes, no branch), then the first token holding it — the lowest id on
  // ties, as llama.cpp's greedy sampler. NaN never wins (a comparison with it
  // is false); a row of -inf and NaN gives token 0, as a single pass would.
  constexpr int kLanes = 8;
  float lane[kLanes];
  std::fill(lane, lane + kLanes, -INFINITY);
  Token i = 0;
  for (; i + kLanes <= n_vocab_; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) lane[j] = logits[i + j] > lane[j] ? logits[i + j] : lane[j];
  }
  float best_v = -INFINITY;
  for (int j = 0; j < kLanes; ++j) best_v = lane[j] > best_v ? lane[j] : best_v;
  for (; i < n_vocab_; ++i) best_v = logits[i] > best_v ? logits[i] : best_v;
  if (!(best_v > -INFINITY)) return 0;
  for (Token t = 0; t < n_vocab_; ++t) {
    if (logits[t] == best_v) return t;
  }
  return 0;
}

Token Sampler::SampleTopK(const float* logits) {
  // The k best values in a heap whose front is the worst of them; between
  // equal values the lower id stays, as a sort by value keeps it first.
  const auto better = [](const std::pair<float, Token>& a, const std::pair<float, Token>& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  // Over the raw row, the best k + (tokens with a bias): that holds the best k
  // of the unbiased tokens whatever the biased ones do. Blocks of 16 with no
  // value above the heap's worst (one vectorised comparison) are
  // skipped whole, which after the first few thousand tokens is nearly all.
  const size_t k = static_cast<size_t>(top_k_) + n_bias_tokens_;
  heap_.clear();
  Token t = 0;
  for (; t < n_vocab_ && heap_.size() < k; ++t) {
    heap_.emplace_back(logits[t], t);
    std::push_heap(heap_.begin(), heap_.end(), better);
  }
  float floor = heap_.front().first;
  const auto offer = [&](Token i) {
    if (!(logits[i] > floor)) return;
    std::pop_heap(heap_.begin(), heap_.end(), better);
    heap_.back() = {logits[i], i};
    std::push_heap(heap_.begin(), heap_.end(), better);
    floor = heap_.front().first;
  };
  constexpr Token kBlock = 16;
  for (; t < n_vocab_ && t % kBlock != 0; ++t) offer(t);
  for (; t + kBlock <= n_vocab_; t += kBlock) {
    int above = 0;
    for (Token j = 0; j < kBlock; ++j) above |= logits[t + j] > floor;
    if (above == 0) continue;
    for (Token j = 0; j < kBlock; ++j) offer(t + j);
  }
  for (; t < n_vocab_; ++t) offer(t);
  if (n_bias_tokens_ > 0) {
    // The biased tokens leave with their raw values and come back with their
    // biased ones; then the worst go until k are left.
    std::erase_if(heap_,
                  [&](const auto& e) { return biased_[static_cast<size_t>(e.second)] != 0; });
    for (size_t i = 0; i < bias_.size(); ++i) {
      if (i > 0 && bias_[i].first == bias_[i - 1].first) continue;
      heap_.emplace_back(Biased(logits, bias_[i].first), bias_[i].first);
    }
    std::make_heap(heap_.begin(), heap_.end(), better);
    while (heap_.size() > static_cast<size_t>(top_k_)) {
      std::pop_heap(heap_.begin(), heap_.end(), better);
      heap_.pop_back();
    }
  }
  // llama.cpp's chain on the k candidates with their raw logits: it adds the
  // bias itself, cuts to top-k (sorting them), then top-p, min-p,
  // temperature and the seeded draw, as on the whole row.
  thread_local std::vector<llama_token_data> cand;
  cand.clear();
  for (const auto& [v, tok] : heap_) cand.push_back({tok, logits[tok], 0.0f});
  llama_token_data_array arr{cand.data(), cand.size(), -1, false};
  llama_sampler_apply(common_sampler_get(common_), &arr);
  const Token tok = arr.data[arr.selected].id;
  common_sampler_accept(common_, tok, /*is_generated=*/true);
  return tok;
}

}  // namespace outpost::engine

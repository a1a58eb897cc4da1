#include "outpost/engine/quality.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <vector>

#include "outpost/engine/context.h"
#include "outpost/util/status_macros.h"

namespace outpost::engine {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

ContextOptions QualityContextOptions(const QualityOptions& options) {
  ContextOptions co;
  co.sessions = 1;
  co.ctx_per_session = options.n_ctx;
  co.batch_size = options.n_ctx;
  co.max_outputs = options.n_ctx;  // every scored position's row
  co.n_threads = options.n_threads;
  return co;
}

StatusOr<QualityReport> CompareQuality(const Model& base, const Model& candidate,
                                       const std::string& text, const QualityOptions& options) {
  if (base.VocabSize() != candidate.VocabSize()) {
    return Status::InvalidArgument("the two versions have different vocabularies (" +
                                       std::to_string(base.VocabSize()) + " and " +
                                       std::to_string(candidate.VocabSize()) + " tokens)",
                                   "model");
  }
  const std::vector<Token> tokens = base.Tokenize(text, /*add_special=*/true, false);
  if (candidate.Tokenize(text, true, false) != tokens) {
    return Status::InvalidArgument("the two versions tokenize the text differently", "model");
  }
  const int32_t n_ctx = options.n_ctx;
  const int32_t chunks =
      std::min<int32_t>(options.max_chunks, static_cast<int32_t>(tokens.size()) / n_ctx);
  if (n_ctx < 16 || chunks < 1) {
    return Status::InvalidArgument("the text has " + std::to_string(tokens.size()) +
                                       " tokens, less than one chunk of " + std::to_string(n_ctx),
                                   "text");
  }
  const ContextOptions co = QualityContextOptions(options);
  std::unique_ptr<Context> cb, cc;
  OUTPOST_ASSIGN_OR_RETURN(cb, Context::Create(base, co));
  OUTPOST_ASSIGN_OR_RETURN(cc, Context::Create(candidate, co));
  double nll_b = 0, nll_c = 0, kl = 0;
  int64_t same = 0, scored = 0;
  std::vector<float> lb, lc;
  const int32_t first = n_ctx / 2;
  for (int32_t c = 0; c < chunks; ++c) {
    const size_t start = static_cast<size_t>(c) * static_cast<size_t>(n_ctx);
    for (Context* ctx : {cb.get(), cc.get()}) {
      ctx->RemoveSequence(0);
      ctx->ClearBatch();
      for (int32_t i = 0; i < n_ctx; ++i) {
        ctx->Add(tokens[start + static_cast<size_t>(i)], i, 0, i >= first - 1 && i < n_ctx - 1);
      }
      OUTPOST_RETURN_IF_ERROR(ctx->Decode());
    }
    // Batch index of position i = i (every token was added in order).
    for (int32_t i = first - 1; i < n_ctx - 1; ++i) {
      cb->LogProbs(i, &lb);
      cc->LogProbs(i, &lc);
      const Token next = tokens[start + static_cast<size_t>(i) + 1];
      nll_b -= lb[static_cast<size_t>(next)];
      nll_c -= lc[static_cast<size_t>(next)];
      double k = 0;
      size_t top_b = 0, top_c = 0;
      for (size_t v = 0; v < lb.size(); ++v) {
        k += std::exp(static_cast<double>(lb[v])) * (lb[v] - lc[v]);
        if (lb[v] > lb[top_b]) top_b = v;
        if (lc[v] > lc[top_c]) top_c = v;
      }
      kl += std::isfinite(k) ? std::max(0.0, k) : INFINITY;  // NaN logits: infinitely off
      same += top_b == top_c ? 1 : 0;
      ++scored;
    }
  }
  QualityReport r;
  r.chunks = chunks;
  r.tokens = static_cast<int32_t>(scored);
  r.ppl_base = std::exp(nll_b / static_cast<double>(scored));
  r.ppl_candidate = std::exp(nll_c / static_cast<double>(scored));
  r.ppl_change_pct = 100.0 * (r.ppl_candidate / r.ppl_base - 1.0);
  r.mean_kl = kl / static_cast<double>(scored);
  r.same_top_pct = 100.0 * static_cast<double>(same) / static_cast<double>(scored);
  return r;
}

ContextOptions GreedyContextOptions(int32_t prompt_tokens, int32_t max_tokens, int32_t n_threads) {
  ContextOptions co;
  co.sessions = 1;
  co.ctx_per_session = prompt_tokens + max_tokens + 8;
  co.batch_size = 64;  // the prompt goes in chunks of it
  co.n_threads = n_threads;
  return co;
}

StatusOr<GreedyAnswer> AnswerGreedily(const Model& model, const std::string& user_message,
                                      int32_t max_tokens, int32_t n_threads) {
  ChatPrompt prompt;
  OUTPOST_ASSIGN_OR_RETURN(prompt, model.ApplyChatTemplate({ChatMessage("user", user_message)}));
  const std::vector<Token> in = model.Tokenize(prompt.text, /*add_special=*/true, true);
  const ContextOptions co =
      GreedyContextOptions(static_cast<int32_t>(in.size()), max_tokens, n_threads);
  std::unique_ptr<Context> ctx;
  OUTPOST_ASSIGN_OR_RETURN(ctx, Context::Create(model, co));
  GreedyAnswer a;
  a.prompt_tokens = static_cast<int32_t>(in.size());
  const auto t0 = Clock::now();
  // The prompt in chunks of the context's batch: its memory does not grow
  // with the prompt (GreedyContextOptions).
  int32_t idx = 0;
  for (size_t start = 0; start < in.size(); start += static_cast<size_t>(co.batch_size)) {
    ctx->ClearBatch();
    const size_t end = std::min(in.size(), start + static_cast<size_t>(co.batch_size));
    for (size_t i = start; i < end; ++i) {
      idx = ctx->Add(in[i], static_cast<int32_t>(i), 0, i + 1 == in.size());
    }
    OUTPOST_RETURN_IF_ERROR(ctx->Decode());
  }
  std::vector<float> lp;
  Clock::time_point first_token;
  int32_t pos = static_cast<int32_t>(in.size());
  for (int32_t n = 0; n < max_tokens; ++n) {
    ctx->LogProbs(idx, &lp);
    const Token t = static_cast<Token>(std::max_element(lp.begin(), lp.end()) - lp.begin());
    if (n == 0) {
      first_token = Clock::now();
      a.ttft_s = Since(t0);
    }
    if (model.IsEndOfGeneration(t)) break;
    a.text += model.TokenPiece(t);
    ++a.completion_tokens;
    bool stopped = false;
    for (const auto& s : prompt.stops) {
      if (!s.empty() && a.text.size() >= s.size() &&
          a.text.compare(a.text.size() - s.size(), s.size(), s) == 0) {
        a.text.resize(a.text.size() - s.size());
        stopped = true;
      }
    }
    if (stopped) break;
    ctx->ClearBatch();
    idx = ctx->Add(t, pos++, 0, true);
    OUTPOST_RETURN_IF_ERROR(ctx->Decode());
  }
  if (a.completion_tokens > 1) {
    a.decode_tps = (a.completion_tokens - 1) / std::max(1e-9, Since(first_token));
  }
  return a;
}

StatusOr<double> DecodeTokensPerSecond(const Model& model, int32_t tokens, int32_t rounds,
                                       int32_t n_threads) {
  tokens = std::max(tokens, 2);
  const std::vector<Token> in = model.Tokenize("The", /*add_special=*/true, false);
  if (in.empty()) return Status::Internal("the model's tokenizer gave no token for a prompt");
  const ContextOptions co =
      GreedyContextOptions(static_cast<int32_t>(in.size()), tokens, n_threads);
  std::unique_ptr<Context> ctx;
  OUTPOST_ASSIGN_OR_RETURN(ctx, Context::Create(model, co));
  std::vector<double> speeds;
  for (int32_t r = 0; r < std::max(rounds, 1); ++r) {
    ctx->RemoveSequence(0);
    ctx->ClearBatch();
    for (size_t i = 0; i < in.size(); ++i) {
      ctx->Add(in[i], static_cast<int32_t>(i), 0, i + 1 == in.size());
    }
    OUTPOST_RETURN_IF_ERROR(ctx->Decode());
    int32_t pos = static_cast<int32_t>(in.size());
    Clock::time_point t0;
    for (int32_t n = 0; n < tokens; ++n) {
      if (n == 1) t0 = Clock::now();
      ctx->ClearBatch();
      ctx->Add(in.back(), pos++, 0, true);
      OUTPOST_RETURN_IF_ERROR(ctx->Decode());
    }
    ctx->TopLogProbs(0, in.back(), 0);  // waits for the last step (a GPU runs it async)
    speeds.push_back((tokens - 1) / std::max(1e-9, Since(t0)));
  }
  std::sort(speeds.begin(), speeds.end());
  return speeds[speeds.size() / 2];
}

}  // namespace outpost::engine

// Quality and speed checks for validating a model version before it serves
// (models/model_validation.h): how a candidate's predictions compare with the
// active version's on a pinned text, and one greedy answer with its timing.
//
// CompareQuality follows llama.cpp's perplexity tool with
// --kl-divergence-base: the text is tokenized once (both models must
// tokenize it the same way), cut into chunks of n_ctx tokens, each chunk
// decoded from an empty cache, and the second half of each chunk scored (the
// first half is context). Per scored token: -log p(next) under each model
// (perplexity = exp of the mean), KL(base ‖ candidate) over the whole
// vocabulary, and whether both put the same token on top. A broken
// quantization shows as a perplexity jump, a large KL and a low same-top
// rate long before its answers look wrong.
//
// Engine thread only: each call creates and frees its own contexts.
#pragma once

#include <cstdint>
#include <string>

#include "outpost/engine/context.h"
#include "outpost/engine/model.h"
#include "outpost/util/status.h"

namespace outpost::engine {

struct QualityOptions {
  int32_t n_ctx = 256;     // tokens per chunk
  int32_t max_chunks = 8;  // at most this many chunks of the text
  int32_t n_threads = 0;   // 0 = usable CPUs (util/cpus.h)
};

struct QualityReport {
  int32_t chunks = 0;
  int32_t tokens = 0;  // scored
  double ppl_base = 0, ppl_candidate = 0;
  double ppl_change_pct = 0;  // 100 * (candidate / base - 1)
  double mean_kl = 0;         // nats per token
  double same_top_pct = 0;
};

// The context CompareQuality makes for each of the two models, both alive at
// once: one sequence of n_ctx tokens with a logits row for every position.
// For sizing its memory beforehand (Context::DryRun).
ContextOptions QualityContextOptions(const QualityOptions& options);

// Errors: InvalidArgument (the two tokenize the text differently or have
// different vocabularies; the text is shorter than one chunk), and the
// context's (ResourceExhausted, Internal).
StatusOr<QualityReport> CompareQuality(const Model& base, const Model& candidate,
                                       const std::string& text, const QualityOptions& options);

// The context AnswerGreedily makes for a prompt of `prompt_tokens` and an
// answer of up to `max_tokens`: one sequence of both, with room to spare,
// and a batch of 64 tokens (the prompt goes in chunks of it, so the compute
// scratch does not grow with the prompt). For sizing its memory beforehand.
ContextOptions GreedyContextOptions(int32_t prompt_tokens, int32_t max_tokens, int32_t n_threads);

struct GreedyAnswer {
  std::string text;
  int32_t prompt_tokens = 0, completion_tokens = 0;
  double ttft_s = 0;      // prefill until the first token
  double decode_tps = 0;  // completion tokens after the first, per second
};

// The model's greedy answer to one user message (its chat template), at
// most max_tokens. Errors: as Context::Create / Decode, the template's.
StatusOr<GreedyAnswer> AnswerGreedily(const Model& model, const std::string& user_message,
                                      int32_t max_tokens, int32_t n_threads = 0);

// One stream's decode speed: `tokens` decode steps of one sequence, each
// computing its logits row, after a short prompt — the same token fed back
// (no sampling: the model's step alone, as llama-bench's tg test), so every
// model decodes the same count; timed from the second step, the median of
// `rounds` runs.
// For comparing two versions of a model on this box (validation), not a
// benchmark: llama-bench and `outpost bench` are those. Errors: as
// Context::Create / Decode.
StatusOr<double> DecodeTokensPerSecond(const Model& model, int32_t tokens = 32, int32_t rounds = 3,
                                       int32_t n_threads = 0);

}  // namespace outpost::engine

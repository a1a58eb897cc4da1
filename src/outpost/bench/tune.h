// TuneThreads — `outpost bench --tune`: which CPU thread counts serve this
// model fastest on this machine, for decoding (threads) and for prompts
// (threads_batch), measured rather than guessed.
//
// Loads the model once per candidate (one session, a small context), runs
// MeasureSpeed through a dispatcher as `serve` would, and unloads it before
// the next. Decode is bandwidth bound and often peaks below the core count
// (hyper-threads and efficiency cores add contention); prompts are compute
// bound and usually want every core — hence two settings.
//
// Runs on the calling thread; the loaded model's engine thread lives only
// inside each measurement.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "outpost/bench/runner.h"
#include "outpost/models/model_runtime.h"
#include "outpost/telemetry/stat_registry.h"
#include "outpost/util/status.h"

namespace outpost::bench {

struct ThreadPoint {
  int threads = 0;
  double prefill_tps = 0;
  double decode_tps = 0;
};

// What kTuneDraft guesses per sequence cost at `sessions` decoding
// sequences: the step time of sessions × (1 + kTuneDraft) tokens over that of
// `sessions` tokens, both read off the session sweep.
struct VerifyCost {
  int32_t sessions = 0;
  double ratio = 0;
};

struct Tuning {
  std::vector<ThreadPoint> points;
  int threads = 0;        // best decode
  int threads_batch = 0;  // best prefill
  // Suggested step_budget (ms): 1.5 × a stream's token gap at full load, so
  // a prompt's prefill chunks may stretch the gap by half and no more; 0
  // when no sweep was measured.
  int64_t step_budget_ms = 0;
  // Suggested speculation: kTuneDraft guesses up to the most decoding
  // sequences at which verifying them is nearly free (ratio <= kFreeVerify);
  // speculative_draft 0 when it is not nearly free even for one sequence.
  std::vector<VerifyCost> verify;
  int32_t speculative_draft = 0;
  int32_t speculative_max_batch = 0;
};

// Guesses per sequence the suggestion is made for, and the step-time ratio
// below which verifying them counts as nearly free: at 1.3 a step that
// verifies 4 guesses pays for itself once ~30% of first guesses are
// confirmed, and within it the scheduler keeps only the guesses its own
// measured pass costs say pay (scheduler/draft_plan.h).
inline constexpr int32_t kTuneDraft = 4;
inline constexpr double kFreeVerify = 1.3;

// 1, 2, 4, … below `cores`, then cores/2 … cores in steps that keep the list
// short (at most 8), always ending at `cores`.
std::vector<int> ThreadCandidates(int cores);

// Errors: what loading the model said.
StatusOr<Tuning> TuneThreads(const models::ModelRuntimeOptions& base,
                             const std::vector<int>& candidates, int32_t prompt_tokens,
                             int32_t gen_tokens, int32_t reps, uint64_t memory_budget,
                             telemetry::StatRegistry& stats,
                             const std::function<void(const std::string&)>& progress);

// Fills t's step budget and speculation suggestion from the session sweep
// of the bench run with the tuned threads (sweep points ascending by
// sessions; a step of n tokens is taken to cost a stream's median token gap
// at n sessions, interpolated between swept counts).
void SuggestFromSweep(const std::vector<SweepPoint>& sweep, Tuning* t);

// The lines of a serve config (YAML) that set what the tuning found.
std::string SuggestedConfig(const Tuning& t);

}  // namespace outpost::bench

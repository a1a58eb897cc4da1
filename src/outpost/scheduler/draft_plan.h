// DraftPlan — how many n-gram guesses each decoding sequence carries in a
// step: the number that makes the step's expected tokens per second
// highest, from what a pass of the model over each number of rows costs on
// this machine and how often each sequence's guesses come true.
//
// A step is one or more passes (engine::BatchPasses: one KV stream per
// sequence, so a batch is split into runs of consecutive sequences with
// equal token counts): four sequences with one token each are one pass of 4
// rows; the same with 3 guesses for sequence 0 are two, 4 rows and then 3.
// StepCostTable learns a pass's time for each row count (an exponential
// moving average per count, from decode-only steps of one pass). Kernels do
// not cost a + b × rows: llama.cpp's CPU matrix kernels take rows in groups
// (the repacked Q4_0 GEMM in fours), a GPU is nearly flat until the batch
// fills its units; so each count is measured, not fitted. A count not yet
// seen is taken at the cost of the largest smaller count seen (optimistic:
// the plan tries it, and learns), or of the smallest larger one when none
// is smaller; a count measured dearer than a larger one is taken at the
// larger one's cost (noise, or a stale value that would otherwise never be
// tried again).
//
// PlanDrafts: a step with n decoding sequences yields n tokens. Guess j of
// sequence i (j = 1, 2, …) is kept only if the j - 1 before it were, so it
// yields a token with probability q_i^j, q_i the chance that a guess of that
// sequence comes true after a true one. The plan weighs the guesses taken in
// order of q_i^j (every prefix of that order) and the same number k for
// every sequence (one pass), and keeps the one with the most expected
// tokens per second of the step's passes. Where rows are nearly free (a GPU,
// a bandwidth-bound CPU) long drafts pay even at modest q; where a row
// costs almost a token (a compute-bound CPU at several sequences) only
// near-certain guesses, rounded to the kernel's row group, are kept.
//
// Not thread-safe (the engine thread owns both).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace outpost::scheduler {

class StepCostTable {
 public:
  // Steps of up to `max_rows` rows are learned; larger ones are ignored.
  explicit StepCostTable(int32_t max_rows);

  // One pass of `rows` rows (a decode-only step of one pass) that took
  // `seconds`.
  void Observe(int32_t rows, double seconds);
  // The estimated time of a pass of `rows` rows (see above); empty until a
  // pass has been seen.
  std::optional<double> Cost(int32_t rows) const;

  // Weight of a new step in its count's average.
  static constexpr double kWeight = 0.2;

 private:
  std::vector<double> seconds_;  // by rows; 0 = not seen
  std::vector<double> cost_;     // what Cost() answers, by rows; 0 = empty
};

struct DraftCandidate {
  size_t seq = 0;         // its sequence id (an index into base_tokens)
  int32_t available = 0;  // guesses on offer (the n-gram draft, within limits)
  double acceptance = 0;  // q: a guess comes true after a true one, in [0, 1]
};

// The guesses to keep of each candidate (same order; each 0 … available)
// in a step whose batch holds base_tokens[i] tokens of sequence i without
// them, one per decoding sequence. All zero while no pass has been measured
// (the step measures one).
std::vector<int32_t> PlanDrafts(std::span<const int32_t> base_tokens,
                                const std::vector<DraftCandidate>& candidates,
                                const StepCostTable& costs);

// A sequence's q from its own record (`accepted` guesses that came true,
// `refused` drafts ended by a wrong guess), starting from `prior` (what
// other sequences' guesses have done) until it has a record of its own:
// (accepted + 2·prior) / (accepted + refused + 2).
double Acceptance(int32_t accepted, int32_t refused, double prior);

}  // namespace outpost::scheduler

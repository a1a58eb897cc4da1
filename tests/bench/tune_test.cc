// bench::SuggestFromSweep and ThreadCandidates: what `outpost bench --tune`
// suggests from the measured session sweep.
#include "outpost/bench/tune.h"

#include <gtest/gtest.h>

#include <cmath>

namespace outpost::bench {
namespace {

// A sweep whose step time at n sessions is fixed_ms + per_token_ms × n.
std::vector<SweepPoint> Sweep(double fixed_ms, double per_token_ms, std::vector<int32_t> counts) {
  std::vector<SweepPoint> out;
  for (int32_t n : counts) {
    SweepPoint p;
    p.sessions = n;
    p.itl_s.p50 = (fixed_ms + per_token_ms * n) / 1000.0;
    out.push_back(p);
  }
  return out;
}

TEST(Tune, SpeculationWhereVerifyingIsNearlyFree) {
  // Bandwidth bound (a GPU, a big model on a CPU): a token adds 1% of a step.
  Tuning t;
  SuggestFromSweep(Sweep(20, 0.2, {1, 2, 4, 8, 16, 32}), &t);
  EXPECT_EQ(t.speculative_draft, kTuneDraft);
  // 1 × 5, 2 × 5 and 4 × 5 tokens lie within the sweep; 8 × 5 = 40 does not.
  ASSERT_EQ(t.verify.size(), 3u);
  EXPECT_EQ(t.verify[0].sessions, 1);
  EXPECT_NEAR(t.verify[0].ratio, (20 + 0.2 * 5) / (20 + 0.2), 1e-9);
  EXPECT_EQ(t.speculative_max_batch, 4);
  EXPECT_NE(SuggestedConfig(t).find("speculative_draft: 4\nspeculative_max_batch: 4\n"),
            std::string::npos);
  // The step budget: 1.5 × the token gap at the most sessions, rounded up.
  EXPECT_EQ(t.step_budget_ms, static_cast<int64_t>(std::ceil((20 + 0.2 * 32) * 1.5)));
}

TEST(Tune, NoSpeculationWhereEveryTokenCosts) {
  // Compute bound (a small model on this CPU): a token adds 60% of a step.
  Tuning t;
  SuggestFromSweep(Sweep(5, 3, {1, 2, 4, 8, 16}), &t);
  EXPECT_EQ(t.speculative_draft, 0);
  EXPECT_EQ(t.speculative_max_batch, 0);
  ASSERT_FALSE(t.verify.empty());
  EXPECT_GT(t.verify[0].ratio, kFreeVerify);
  const std::string cfg = SuggestedConfig(t);
  EXPECT_NE(cfg.find("speculative_draft: 0  # 4 guesses make a 1-sequence step"), std::string::npos)
      << cfg;
}

TEST(Tune, SuggestionStopsAtTheFirstCostlyCount) {
  // Free at 1 and 4 sessions but not at 2 (noise, or a kernel switch): the
  // suggestion covers only 1, the counts it holds for without a gap.
  std::vector<SweepPoint> s = Sweep(20, 0.2, {1, 2, 4, 8, 16, 32});
  s[3].itl_s.p50 = 0.035;  // a slow 8-session step: 2 × 5 = 10 tokens lies between 8 and 16
  Tuning t;
  SuggestFromSweep(s, &t);
  ASSERT_GE(t.verify.size(), 2u);
  EXPECT_LE(t.verify[0].ratio, kFreeVerify);
  EXPECT_GT(t.verify[1].ratio, kFreeVerify);
  EXPECT_EQ(t.speculative_max_batch, 1);
}

TEST(Tune, NothingToSuggestFromAnEmptyOrOneSessionSweep) {
  Tuning t;
  SuggestFromSweep({}, &t);
  EXPECT_EQ(t.step_budget_ms, 0);
  EXPECT_TRUE(t.verify.empty());
  // One session: 5 tokens' step was never measured, so no speculation claim.
  SuggestFromSweep(Sweep(10, 1, {1}), &t);
  EXPECT_TRUE(t.verify.empty());
  EXPECT_EQ(t.speculative_draft, 0);
  EXPECT_EQ(SuggestedConfig(t).find("speculative"), std::string::npos);
}

TEST(Tune, ThreadCandidates) {
  EXPECT_EQ(ThreadCandidates(1), std::vector<int>({1}));
  EXPECT_EQ(ThreadCandidates(2), std::vector<int>({1, 2}));
  EXPECT_EQ(ThreadCandidates(8), std::vector<int>({1, 2, 4, 6, 8}));
  for (int cores : {16, 64, 192}) {
    const auto c = ThreadCandidates(cores);
    EXPECT_LE(c.size(), 8u);
    EXPECT_EQ(c.front(), 1);
    EXPECT_EQ(c.back(), cores);
  }
}

}  // namespace
}  // namespace outpost::bench

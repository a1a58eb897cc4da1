// DraftPlan: the step cost table learned from (rows, seconds) pairs, and the
// guesses a step keeps given it and each sequence's acceptance.
#include "outpost/scheduler/draft_plan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace outpost::scheduler {
namespace {

// llama-batched-bench on this 2-vCPU box, SmolLM2 135M Q4_0, one decode step
// of N sequences (every row with logits, as a guessed row has), ms by rows.
const std::vector<std::pair<int32_t, double>> kQ4_0Cpu = {
    {1, 6.1},  {2, 10.3}, {3, 12.8},  {4, 14.1},  {5, 19.9},
    {6, 22.5}, {8, 22.1}, {12, 30.9}, {16, 34.6}, {20, 42.0}};

StepCostTable Learned(const std::vector<std::pair<int32_t, double>>& ms) {
  StepCostTable t(64);
  for (const auto& [rows, cost] : ms) t.Observe(rows, cost / 1000);
  return t;
}

// Candidates for sequences 0, 1, … in order: {guesses on offer, q}.
std::vector<DraftCandidate> Offers(const std::vector<std::pair<int32_t, double>>& o) {
  std::vector<DraftCandidate> out;
  for (size_t i = 0; i < o.size(); ++i) out.push_back({i, o[i].first, o[i].second});
  return out;
}

std::vector<int32_t> Plan(const std::vector<int32_t>& base,
                          const std::vector<std::pair<int32_t, double>>& offers,
                          const StepCostTable& t) {
  return PlanDrafts(base, Offers(offers), t);
}

TEST(StepCostTable, UnseenCountsAreTakenAtTheLargestSmallerCountSeen) {
  StepCostTable t(32);
  EXPECT_FALSE(t.Cost(1).has_value());
  t.Observe(4, 0.012);
  EXPECT_DOUBLE_EQ(*t.Cost(3), 0.012) << "nothing smaller seen: the smallest larger count";
  EXPECT_DOUBLE_EQ(*t.Cost(4), 0.012);
  EXPECT_DOUBLE_EQ(*t.Cost(9), 0.012) << "optimistic: the plan tries 9 and learns";
  t.Observe(9, 0.020);
  EXPECT_DOUBLE_EQ(*t.Cost(9), 0.020);
  EXPECT_DOUBLE_EQ(*t.Cost(8), 0.012);
  EXPECT_DOUBLE_EQ(*t.Cost(100), 0.020) << "past the table: its last count";
}

TEST(StepCostTable, AveragesEachCountAndCapsOneMeasuredDearerThanALargerOne) {
  StepCostTable t(32);
  t.Observe(5, 0.010);
  t.Observe(5, 0.020);
  EXPECT_NEAR(*t.Cost(5), 0.8 * 0.010 + 0.2 * 0.020, 1e-12);
  // A noisy 6-row step (another process took the core) must not stop the
  // plan from ever trying 6 or 7 rows again: 8 rows were cheaper.
  t.Observe(6, 0.050);
  t.Observe(8, 0.016);
  EXPECT_DOUBLE_EQ(*t.Cost(6), 0.016);
  EXPECT_DOUBLE_EQ(*t.Cost(7), 0.016);
  EXPECT_NEAR(*t.Cost(5), 0.012, 1e-12);
  // Nonsense is ignored: no rows, no time, too many rows.
  t.Observe(0, 1.0);
  t.Observe(3, 0.0);
  t.Observe(3, -1.0);
  t.Observe(3, std::nan(""));
  t.Observe(33, 0.001);
  EXPECT_DOUBLE_EQ(*t.Cost(3), *t.Cost(5));
  EXPECT_DOUBLE_EQ(*t.Cost(32), 0.016);
}

TEST(PlanDrafts, NothingUntilAPassHasBeenMeasured) {
  StepCostTable t(32);
  EXPECT_EQ(Plan({1}, {{4, 0.99}}, t), std::vector<int32_t>({0}));
  t.Observe(1, 0.007);
  // Bigger passes not seen yet: taken at the 1-row cost, so the whole draft goes in.
  EXPECT_EQ(Plan({1}, {{4, 0.99}}, t), std::vector<int32_t>({4}));
}

TEST(PlanDrafts, NearlyFreeRowsCarryLongDraftsEvenAtModestAcceptance) {
  // A GPU-like pass: 10 ms plus 0.05 ms a row.
  StepCostTable t(64);
  for (int32_t r = 1; r <= 64; ++r) t.Observe(r, 0.010 + 0.00005 * r);
  EXPECT_EQ(Plan({1, 1, 1, 1}, {{8, 0.5}, {8, 0.5}, {8, 0.5}, {8, 0.5}}, t),
            std::vector<int32_t>({4, 4, 4, 4}));
  // A sequence that is rarely right still guesses where a row is almost free.
  EXPECT_EQ(Plan({1}, {{8, 0.1}}, t), std::vector<int32_t>({2}));
}

TEST(PlanDrafts, OnACpuWhereRowsCostAlmostATokenOnlySureGuessesGoIn) {
  const StepCostTable t = Learned(kQ4_0Cpu);
  // One sequence: 4 rows cost 14.1 ms against 6.1 for one, 5 rows 19.9.
  // Echo guesses at q = 0.9: three, (1 + 2.44) / 14.1 > 1 / 6.1; a fourth
  // would bring 0.66 of a token for 5.8 ms more.
  EXPECT_EQ(Plan({1}, {{4, 0.9}}, t), std::vector<int32_t>({3}));
  EXPECT_EQ(Plan({1}, {{4, 0.5}}, t), std::vector<int32_t>({0}));
  // Four sequences (14.1 ms): where guesses nearly always come true, four
  // each (20 rows in one pass, 42 ms, 4 + 14.4 tokens); at q = 0.8 three;
  // at a third never.
  EXPECT_EQ(Plan({1, 1, 1, 1}, {{4, 0.95}, {4, 0.95}, {4, 0.95}, {4, 0.95}}, t),
            std::vector<int32_t>({4, 4, 4, 4}));
  EXPECT_EQ(Plan({1, 1, 1, 1}, {{4, 0.8}, {4, 0.8}, {4, 0.8}, {4, 0.8}}, t),
            std::vector<int32_t>({3, 3, 3, 3}));
  EXPECT_EQ(Plan({1, 1, 1, 1}, {{4, 0.33}, {4, 0.33}, {4, 0.33}, {4, 0.33}}, t),
            std::vector<int32_t>({0, 0, 0, 0}));
  // One sure sequence among three that are not: its guesses would be a
  // second pass (4 rows, then 4 of its own: 28.2 ms for 7.9 tokens), which
  // is worse than none.
  EXPECT_EQ(Plan({1, 1, 1, 1}, {{4, 0.99}, {4, 0.2}, {4, 0.2}, {4, 0.2}}, t),
            std::vector<int32_t>({0, 0, 0, 0}));
}

TEST(PlanDrafts, WeighsThePassesASplitBatchTakes) {
  // Every pass costs the same whatever its rows: only passes count.
  StepCostTable t(64);
  for (int32_t r = 1; r <= 64; ++r) t.Observe(r, 0.010);
  // Sequences 0, 2 and 3 run (two passes already); equal guesses keep it
  // at two, so all of them go in.
  EXPECT_EQ(
      PlanDrafts(std::vector<int32_t>{1, 0, 1, 1}, {{0, 4, 0.9}, {2, 4, 0.9}, {3, 4, 0.9}}, t),
      std::vector<int32_t>({4, 4, 4}));
  // A guess for one of two sequences makes a second pass: twice the time
  // for at most one token more.
  EXPECT_EQ(Plan({1, 1}, {{1, 0.99}, {0, 0.0}}, t), std::vector<int32_t>({0, 0}));
  // For both, one pass: in.
  EXPECT_EQ(Plan({1, 1}, {{1, 0.99}, {1, 0.99}}, t), std::vector<int32_t>({1, 1}));
}

TEST(PlanDrafts, KeepsWithinWhatEachSequenceOffers) {
  StepCostTable t(64);
  for (int32_t r = 1; r <= 64; ++r) t.Observe(r, 0.010);
  // Three passes (3 rows, 2 of sequence 0, 6 of sequence 2) for 9.1 tokens
  // beat one for 3.
  EXPECT_EQ(Plan({1, 1, 1}, {{2, 1.0}, {0, 1.0}, {6, 0.9}}, t), std::vector<int32_t>({2, 0, 6}));
  EXPECT_EQ(Plan({1, 1}, {{3, 0.0}, {3, -1.0}}, t), std::vector<int32_t>({0, 0}));
  EXPECT_TRUE(Plan({1, 1}, {}, t).empty());
}

TEST(Acceptance, StartsFromThePriorAndFollowsTheSequencesOwnRecord) {
  EXPECT_DOUBLE_EQ(Acceptance(0, 0, 0.7), 0.7);
  EXPECT_DOUBLE_EQ(Acceptance(98, 0, 0.5), 0.99);
  EXPECT_DOUBLE_EQ(Acceptance(0, 20, 0.98), 1.96 / 22);
  EXPECT_NEAR(Acceptance(30, 10, 0.5), 31.0 / 42, 1e-12);
}

}  // namespace
}  // namespace outpost::scheduler

// DraftPlan: the step cost table learned from (rows, seconds) pairs, and the
// guesses a step keeps given it and each sequence's acceptance.
#include "outpost/scheduler/draft_plan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace outpost::scheduler {
namespace {

// llama-bench -p N on this 2-vCPU box, SmolLM2 135M Q4_0 (repacked GEMM:
// rows go in fours), ms per step.
double Q4_0Cpu(int32_t rows) {
  const int32_t groups = (rows + 3) / 4;
  return rows == 1 ? 7.1 : 8.0 + 4.2 * groups;
}

StepCostTable Learned(double (*cost)(int32_t), int32_t max_rows) {
  StepCostTable t(64);
  for (int32_t r = 1; r <= max_rows; ++r) t.Observe(r, cost(r) / 1000);
  return t;
}

TEST(StepCostTable, UnseenCountsAreTakenAtTheLargestSmallerCountSeen) {
  StepCostTable t(32);
  EXPECT_FALSE(t.Cost(1).has_value());
  t.Observe(4, 0.012);
  EXPECT_FALSE(t.Cost(3).has_value()) << "nothing at or below 3 rows seen";
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
  EXPECT_FALSE(t.Cost(3).has_value());
  EXPECT_DOUBLE_EQ(*t.Cost(32), 0.016);
}

TEST(PlanDrafts, NothingUntilTheStepWithoutGuessesHasBeenMeasured) {
  StepCostTable t(32);
  const std::vector<DraftCandidate> c = {{4, 0.99}};
  EXPECT_EQ(PlanDrafts(1, c, t), std::vector<int32_t>({0}));
  t.Observe(1, 0.007);
  // Bigger steps not seen yet: taken at the 1-row cost, so the whole draft goes in.
  EXPECT_EQ(PlanDrafts(1, c, t), std::vector<int32_t>({4}));
}

TEST(PlanDrafts, NearlyFreeRowsCarryLongDraftsEvenAtModestAcceptance) {
  // A GPU-like step: 10 ms plus 0.05 ms a row.
  StepCostTable t(64);
  for (int32_t r = 1; r <= 64; ++r) t.Observe(r, 0.010 + 0.00005 * r);
  EXPECT_EQ(PlanDrafts(4, {{8, 0.5}, {8, 0.5}, {8, 0.5}, {8, 0.5}}, t),
            std::vector<int32_t>({4, 4, 4, 4}));
  // A sequence that is rarely right still guesses where a row is almost free.
  EXPECT_EQ(PlanDrafts(1, {{8, 0.1}}, t), std::vector<int32_t>({2}));
}

TEST(PlanDrafts, OnACpuWhereRowsGoInFoursOnlyWorthwhileGroupsGoIn) {
  const StepCostTable t = Learned(Q4_0Cpu, 32);
  // One sequence: 4 rows cost 12.2 ms against 7.1 for one, 5 rows 16.4.
  // Echo guesses at q = 0.9: three fill the group ((1 + 2.44) / 12.2 beats
  // 1 / 7.1), a fourth would open a new group for 0.66 of a token.
  EXPECT_EQ(PlanDrafts(1, {{4, 0.9}}, t), std::vector<int32_t>({3}));
  // At q = 0.3 the group brings 0.42 tokens for 5.1 ms more: none.
  EXPECT_EQ(PlanDrafts(1, {{4, 0.3}}, t), std::vector<int32_t>({0}));
  // Four sequences: the step is 12.2 ms. Where guesses nearly always come
  // true the plan fills whole groups of four rows …
  const std::vector<int32_t> sure = PlanDrafts(4, {{4, 0.95}, {4, 0.95}, {4, 0.95}, {4, 0.95}}, t);
  int32_t rows = 4;
  for (int32_t k : sure) rows += k;
  EXPECT_EQ(rows % 4, 0) << "a group half filled costs what a full one does";
  EXPECT_GT(rows, 4);
  // … and where one sequence echoes and three do not, only the echo guesses.
  const std::vector<int32_t> mixed = PlanDrafts(4, {{4, 0.95}, {4, 0.2}, {4, 0.2}, {4, 0.2}}, t);
  EXPECT_EQ(mixed, std::vector<int32_t>({4, 0, 0, 0}));
  // Guesses that are right a third of the time never pay at four sequences.
  EXPECT_EQ(PlanDrafts(4, {{4, 0.33}, {4, 0.33}, {4, 0.33}, {4, 0.33}}, t),
            std::vector<int32_t>({0, 0, 0, 0}));
}

TEST(PlanDrafts, KeepsWithinWhatEachSequenceOffers) {
  StepCostTable t(64);
  for (int32_t r = 1; r <= 64; ++r) t.Observe(r, 0.010);
  EXPECT_EQ(PlanDrafts(3, {{2, 1.0}, {0, 1.0}, {6, 0.9}}, t), std::vector<int32_t>({2, 0, 6}));
  EXPECT_EQ(PlanDrafts(2, {{3, 0.0}, {3, -1.0}}, t), std::vector<int32_t>({0, 0}));
  EXPECT_TRUE(PlanDrafts(2, {}, t).empty());
}

TEST(Acceptance, StartsFromThePriorAndFollowsTheSequencesOwnRecord) {
  EXPECT_DOUBLE_EQ(Acceptance(0, 0, 0.7), 0.7);
  EXPECT_DOUBLE_EQ(Acceptance(98, 0, 0.5), 0.99);
  EXPECT_DOUBLE_EQ(Acceptance(0, 20, 0.98), 1.96 / 22);
  EXPECT_NEAR(Acceptance(30, 10, 0.5), 31.0 / 42, 1e-12);
}

}  // namespace
}  // namespace outpost::scheduler

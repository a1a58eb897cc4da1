#include "outpost/scheduler/capacity.h"

#include <gtest/gtest.h>

namespace outpost::scheduler {
namespace {

constexpr uint64_t kGB = 1000ull * 1000 * 1000;
constexpr uint64_t kMiB = 1024ull * 1024;

TEST(KvBytesPerToken, LayersTimesHeadsTimesDimTimesTwoTimesSize) {
  // Llama-2 7B: 32 layers, 32 KV heads, head dim 128, f16:
  // 32 * 32 * 128 * 2 * 2 = 524288 bytes = 0.5 MiB per token.
  EXPECT_EQ(KvBytesPerToken(32, 32, 128, 128, 2.0), 524288u);
  // Llama-3 8B with GQA: 8 KV heads → 131072 bytes per token.
  EXPECT_EQ(KvBytesPerToken(32, 8, 128, 128, 2.0), 131072u);
  // q8_0 stores 34 bytes per 32 elements.
  EXPECT_EQ(KvBytesPerToken(32, 8, 128, 128, 34.0 / 32.0), 69632u);
}

TEST(KvBytesPerToken, DefaultModelGemma3_270M) {
  // Gemma 3 270M: 18 layers, 1 KV head, key and value length 256, f16:
  // 18 * 1 * (256 + 256) * 2 = 18432 bytes per token; 4096 tokens = 72 MiB.
  EXPECT_EQ(KvBytesPerToken(18, 1, 256, 256, 2.0), 18432u);
  EXPECT_EQ(KvBytesPerToken(18, 1, 256, 256, 2.0) * 4096, 72 * kMiB);
}

TEST(Headroom, FieldWorkedExample7BFourBitSixteenSessions) {
  // A 7B model at 4 bits is about 4 GB of weights; 16 sessions at 0.4 GB each
  // add 6.4 GB; peak 10.4 GB; with 20% headroom about 12.5 GB: a 12 GB class box.
  const uint64_t weights = 4 * kGB;
  const uint64_t per_session = 400ull * 1000 * 1000;
  const uint64_t peak = weights + 16 * per_session;
  EXPECT_EQ(peak, 10'400'000'000ull);
  EXPECT_EQ(RequiredWithHeadroom(peak, 0.2), 12'480'000'000ull);
}

TEST(PlanCapacity, WorkedExampleFitsSixteenOnTwelvePointFiveGB) {
  CapacityInputs in;
  in.weight_bytes = 4 * kGB;
  in.kv_bytes_per_token = 100'000;  // 0.4 GB per session at 4000 tokens
  in.ctx_per_session = 4000;
  in.overhead_bytes = 0;
  in.memory_budget_bytes = 12'480'000'000ull;
  in.headroom_fraction = 0.2;
  auto plan = PlanCapacity(in, 16, 64);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->kv_bytes_per_session, 400'000'000u);
  EXPECT_EQ(plan->usable_bytes, 10'400'000'000u);
  EXPECT_EQ(plan->max_sessions, 16);
  EXPECT_EQ(plan->peak_bytes, 10'400'000'000u);
  // One more session does not fit, and the error gives the numbers.
  auto over = PlanCapacity(in, 17, 64);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(over.status().message().find("parallel 17 does not fit"), std::string::npos);
  EXPECT_NE(over.status().message().find("at most 16 sessions"), std::string::npos);
}

TEST(PlanCapacity, AutoTakesMaxThatFitsCappedByAutoCap) {
  CapacityInputs in;
  in.weight_bytes = 1000;
  in.kv_bytes_per_token = 10;
  in.ctx_per_session = 10;  // 100 bytes per session
  in.overhead_bytes = 200;
  in.memory_budget_bytes = 2400;  // usable 2000 → (2000 - 1200) / 100 = 8
  in.headroom_fraction = 0.2;
  auto plan = PlanCapacity(in, 0, 64);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->max_sessions, 8);
  EXPECT_EQ(plan->sessions, 8);
  EXPECT_EQ(plan->peak_bytes, 2000u);
  auto capped = PlanCapacity(in, 0, 3);
  ASSERT_TRUE(capped.ok());
  EXPECT_EQ(capped->sessions, 3);
  EXPECT_EQ(capped->max_sessions, 8);
}

TEST(PlanCapacity, WeightsThatDoNotFitAreRefusedWithNumbers) {
  CapacityInputs in;
  in.weight_bytes = 8 * kGB;
  in.kv_bytes_per_token = 1000;
  in.ctx_per_session = 1000;
  in.memory_budget_bytes = 8 * kGB;
  auto plan = PlanCapacity(in, 0, 16);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("not even one session fits"), std::string::npos);
}

TEST(PlanCapacity, DefaultModelOnOneGiBBudget) {
  // Gemma 3 270M Q4_K_M as the GGUF reports it, 2048-token sessions.
  CapacityInputs in;
  in.weight_bytes = 246'587'904;  // sum of tensor sizes in the default GGUF
  in.kv_bytes_per_token = 18432;
  in.ctx_per_session = 2048;  // 36 MiB per session
  in.overhead_bytes = 128 * kMiB;
  in.memory_budget_bytes = 1024 * kMiB;
  in.headroom_fraction = 0.2;
  auto plan = PlanCapacity(in, 0, 64);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->kv_bytes_per_session, 36 * kMiB);
  // usable = 1024 MiB / 1.2 = 894784853 bytes; minus weights and overhead
  // = 513979221; / 37748736 = 13 sessions.
  EXPECT_EQ(plan->usable_bytes, 894'784'853u);
  EXPECT_EQ(plan->max_sessions, 13);
}

TEST(DetectAvailableMemory, ReportsSomething) {
  EXPECT_GT(DetectAvailableMemory(), 64 * kMiB);
}

}  // namespace
}  // namespace outpost::scheduler

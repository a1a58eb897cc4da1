#include "outpost/telemetry/history.h"

#include <gtest/gtest.h>

#include "mocks/sim_clock.h"
#include "outpost/telemetry/genai_stats.h"

namespace outpost::telemetry {
namespace {

HistogramSnapshot Hist(std::vector<double> bounds, std::vector<uint64_t> cumulative) {
  HistogramSnapshot h;
  h.bounds = std::move(bounds);
  h.cumulative = std::move(cumulative);
  h.count = h.cumulative.back();
  return h;
}

TEST(QuantileOfDelta, InterpolatesInsideTheBucketLikePrometheus) {
  const auto before = Hist({1, 2, 4}, {0, 0, 0, 0});
  // 10 observations in (1, 2]: the median is half-way through that bucket.
  const auto after = Hist({1, 2, 4}, {0, 10, 10, 10});
  EXPECT_DOUBLE_EQ(QuantileOfDelta(before, after, 0.5), 1.5);
  EXPECT_DOUBLE_EQ(QuantileOfDelta(before, after, 0.95), 1.95);
  // Only the new observations count: the old ones sit in (0, 1].
  const auto old = Hist({1, 2, 4}, {100, 100, 100, 100});
  const auto later = Hist({1, 2, 4}, {100, 100, 110, 110});
  EXPECT_DOUBLE_EQ(QuantileOfDelta(old, later, 0.5), 3.0);
  // Nothing new: no quantile. Past the last bound: the last bound.
  EXPECT_EQ(QuantileOfDelta(later, later, 0.5), -1);
  EXPECT_DOUBLE_EQ(QuantileOfDelta(before, Hist({1, 2, 4}, {0, 0, 0, 5}), 0.5), 4);
}

TEST(History, RatesQuantilesAndGaugesFromTheRegistry) {
  StatRegistry reg;
  outpost::testing::SimClock clock;
  auto& tokens =
      reg.Register({"outpost_completion_tokens_total", "", StatType::kCounter, {"model"}, {}})
          .CounterWith({"m"});
  auto& active = reg.Register({"outpost_active_sequences", "", StatType::kGauge, {"model"}, {}})
                     .GaugeWith({"m"});
  reg.Register({"outpost_max_sessions", "", StatType::kGauge, {"model"}, {}})
      .GaugeWith({"m"})
      .Set(4);
  reg.Register({"outpost_hw_temperature_celsius",
                "",
                StatType::kGauge,
                {"hw_id", "hw_type", "source"},
                {}})
      .GaugeWith({"cpu0", "cpu", "hwmon"})
      .Set(61.5);
  GenAiServerStats genai(&reg, "m");
  History h(&reg, 1000, &clock);
  h.SampleNow();  // primes
  EXPECT_TRUE(h.Json()["points"].empty());

  tokens.Add(50);
  active.Set(3);
  genai.Record("chat", "default", 2.0, 0.3, 20, "");
  genai.Record("chat", "default", 1.0, 0.3, 10, "");
  genai.Record("chat", "default", 0.1, -1, 0, "internal");
  genai.Record("chat", "default", 0.1, -1, 0, "cancelled");
  // A batch line waited its turn in the lowest class: a request, not a user's wait.
  genai.Record("chat", "batch", 40.0, 30.0, 10, "");
  clock.Advance(std::chrono::seconds(5));
  h.SampleNow();
  const auto j = h.Json();
  ASSERT_EQ(j["points"].size(), 1u);
  const auto& p = j["points"][0];
  EXPECT_DOUBLE_EQ(p["tokens_per_s"].get<double>(), 10);     // 50 tokens in 5 s
  EXPECT_DOUBLE_EQ(p["requests_per_s"].get<double>(), 1.0);  // 5 in 5 s
  EXPECT_DOUBLE_EQ(p["errors_per_s"].get<double>(), 0.2);    // cancellations are not errors
  // Both first tokens are in the (0.25, 0.5] bucket: the median interpolates to 0.375.
  EXPECT_DOUBLE_EQ(p["ttft_p50_s"].get<double>(), 0.375);
  EXPECT_DOUBLE_EQ(p["sessions_used"].get<double>(), 3);
  EXPECT_DOUBLE_EQ(p["sessions_max"].get<double>(), 4);
  EXPECT_DOUBLE_EQ(p["hottest_c"].get<double>(), 61.5);
  EXPECT_TRUE(p["power_w"].is_null());
  EXPECT_EQ(j["current"]["sensors"][0]["hw_id"], "cpu0");
  EXPECT_DOUBLE_EQ(j["current"]["requests_total"].get<double>(), 5);

  // A quiet interval: zero rates, no quantile.
  clock.Advance(std::chrono::seconds(5));
  h.SampleNow();
  const auto quiet = h.Json()["points"][1];
  EXPECT_DOUBLE_EQ(quiet["tokens_per_s"].get<double>(), 0);
  EXPECT_TRUE(quiet["ttft_p95_s"].is_null());
}

TEST(History, KeepsOneHour) {
  StatRegistry reg;
  outpost::testing::SimClock clock;
  History h(&reg, 60'000, &clock);  // one point a minute: 60 points
  for (int i = 0; i < 100; ++i) {
    h.SampleNow();
    clock.Advance(std::chrono::minutes(1));
  }
  EXPECT_EQ(h.Json()["points"].size(), 60u);
}

}  // namespace
}  // namespace outpost::telemetry

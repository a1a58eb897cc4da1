#include "outpost/telemetry/stat_registry.h"

#include <gtest/gtest.h>

#include "outpost/telemetry/prometheus_text.h"
#include "outpost/telemetry/stats.h"

// A module's table, as modules declare theirs.
// clang-format off
#define TEST_STATS(COUNTER, GAUGE, HISTOGRAM, COUNTER_VEC)                                  \
  COUNTER(tokens, "outpost_test_tokens_total", "Tokens.")                                   \
  GAUGE(queue, "outpost_test_queue_depth", "Queue.")                                        \
  HISTOGRAM(ttft, "outpost_test_ttft_seconds", "TTFT.", (std::vector<double>{0.025, 0.05})) \
  COUNTER_VEC(requests, "outpost_test_requests_total", "Requests.", "endpoint", "status")
// clang-format on

namespace outpost::telemetry {
namespace {

OUTPOST_DEFINE_STATS(TestStats, TEST_STATS);

TEST(StatRegistry, OneTableGivesSeriesPerModelAndRendersPrometheusText) {
  StatRegistry r;
  const TestStats a = TestStats::Register(r, {"model"}, {"gemma"});
  const TestStats b = TestStats::Register(r, {"model"}, {"smollm"});
  a.tokens.Add(12);
  b.tokens.Add(3);
  a.queue.Set(3);
  a.ttft.Observe(0.03);
  a.requests.With({"/v1/chat/completions", "200"}).Add(2);
  a.requests.With({"/v1/chat/completions", "400"}).Add();
  // Registering again binds the same series.
  EXPECT_EQ(TestStats::Register(r, {"model"}, {"gemma"}).tokens.value(), 12u);

  const std::string text = PrometheusText(r.Snapshot());
  for (const char* line : {
           "# TYPE outpost_test_tokens_total counter\n",
           "outpost_test_tokens_total{model=\"gemma\"} 12\n",
           "outpost_test_tokens_total{model=\"smollm\"} 3\n",
           "outpost_test_queue_depth{model=\"gemma\"} 3\n",
           "# TYPE outpost_test_ttft_seconds histogram\n",
           "outpost_test_ttft_seconds_bucket{model=\"gemma\",le=\"0.025\"} 0\n",
           "outpost_test_ttft_seconds_bucket{model=\"gemma\",le=\"0.05\"} 1\n",
           "outpost_test_ttft_seconds_bucket{model=\"gemma\",le=\"+Inf\"} 1\n",
           "outpost_test_ttft_seconds_count{model=\"gemma\"} 1\n",
           "outpost_test_requests_total{model=\"gemma\",endpoint=\"/v1/chat/completions\","
           "status=\"200\"} 2\n",
           "outpost_test_requests_total{model=\"gemma\",endpoint=\"/v1/chat/completions\","
           "status=\"400\"} 1\n",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\nin\n" << text;
  }
  // Each family has one HELP and one TYPE line, however many series.
  EXPECT_EQ(text.find("# HELP outpost_test_tokens_total"),
            text.rfind("# HELP outpost_test_tokens_total"));
}

TEST(StatRegistry, ComputedSeriesAreReadAtSnapshotTime) {
  StatRegistry r;
  double v = 1;
  r.Register({"outpost_test_opened_total", "Opened.", StatType::kCounter, {}, {}})
      .ComputedWith({}, [&v] { return v; });
  v = 7;
  EXPECT_NE(PrometheusText(r.Snapshot()).find("outpost_test_opened_total 7\n"), std::string::npos);
}

TEST(StatRegistry, LabelValuesAreEscaped) {
  StatRegistry r;
  r.Register({"outpost_test_x_total", "X.", StatType::kCounter, {"reason"}, {}})
      .CounterWith({"a\"b\\c\nd"})
      .Add();
  EXPECT_NE(PrometheusText(r.Snapshot()).find(R"(outpost_test_x_total{reason="a\"b\\c\nd"} 1)"),
            std::string::npos);
}

TEST(Histogram, BucketsAreCumulative) {
  Histogram h({1, 2, 3});
  for (double v : {0.5, 1.5, 2.5, 10.0}) h.Observe(v);
  const HistogramSnapshot s = h.Snapshot();
  EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{1, 2, 3, 4}));
  EXPECT_DOUBLE_EQ(s.sum, 14.5);
  EXPECT_EQ(s.count, 4u);
}

}  // namespace
}  // namespace outpost::telemetry

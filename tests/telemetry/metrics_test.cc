#include "outpost/telemetry/metrics.h"

#include <gtest/gtest.h>

namespace outpost::telemetry {
namespace {

TEST(Metrics, RendersDeclaredSeriesWithPrometheusNames) {
  Metrics m;
  m.CountRequest("/v1/chat/completions", 200);
  m.CountRequest("/v1/chat/completions", 200);
  m.CountRequest("/v1/chat/completions", 400);
  m.prompt_tokens_total += 12;
  m.time_to_first_token_seconds.Observe(0.03);
  m.queue_depth = 3;
  const std::string text = m.Render();
  EXPECT_NE(text.find("outpost_requests_total{endpoint=\"/v1/chat/completions\",status=\"200\"} 2"),
            std::string::npos);
  EXPECT_NE(text.find("outpost_requests_total{endpoint=\"/v1/chat/completions\",status=\"400\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("outpost_prompt_tokens_total 12"), std::string::npos);
  EXPECT_NE(text.find("# TYPE outpost_time_to_first_token_seconds histogram"), std::string::npos);
  EXPECT_NE(text.find("outpost_time_to_first_token_seconds_bucket{le=\"0.05\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("outpost_time_to_first_token_seconds_bucket{le=\"0.025\"} 0"),
            std::string::npos);
  EXPECT_NE(text.find("outpost_time_to_first_token_seconds_count 1"), std::string::npos);
  EXPECT_NE(text.find("outpost_queue_depth 3"), std::string::npos);
  for (const char* name : {"outpost_inter_token_latency_seconds", "outpost_active_sequences",
                           "outpost_kv_bytes_used", "outpost_kv_bytes_limit",
                           "outpost_decode_tokens_per_second", "outpost_completion_tokens_total"}) {
    EXPECT_NE(text.find(std::string("# TYPE ") + name), std::string::npos) << name;
  }
}

TEST(Histogram, BucketsAreCumulative) {
  Histogram h({1, 2, 3});
  for (double v : {0.5, 1.5, 2.5, 10.0}) h.Observe(v);
  std::string out;
  h.Render("x", &out);
  EXPECT_NE(out.find("x_bucket{le=\"1\"} 1\n"), std::string::npos);
  EXPECT_NE(out.find("x_bucket{le=\"2\"} 2\n"), std::string::npos);
  EXPECT_NE(out.find("x_bucket{le=\"3\"} 3\n"), std::string::npos);
  EXPECT_NE(out.find("x_bucket{le=\"+Inf\"} 4\n"), std::string::npos);
  EXPECT_NE(out.find("x_sum 14.5\n"), std::string::npos);
}

}  // namespace
}  // namespace outpost::telemetry

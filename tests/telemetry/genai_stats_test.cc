#include "outpost/telemetry/genai_stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "outpost/telemetry/prometheus_text.h"
#include "outpost/telemetry/stat_registry.h"

namespace outpost::telemetry {
namespace {

TEST(GenAiServerStats, StandardNamesLabelsAndOneValuePerRequest) {
  StatRegistry reg;
  GenAiServerStats s(&reg, "smollm2");
  // 2.0 s in all, first token after 0.5 s, 31 tokens: 1.5 s / 30 = 0.05 s per token.
  s.Record("chat", "default", 2.0, 0.5, 31, "");
  s.Record("chat", "default", 0.2, -1, 0, "unavailable");  // failed before any token
  const std::string text = PrometheusText(reg.Snapshot());
  const std::string ok =
      "gen_ai_operation_name=\"chat\",gen_ai_provider_name=\"outpost\","
      "gen_ai_request_model=\"smollm2\",openai_response_service_tier=\"default\"";
  // A success has no error_type (OpenTelemetry sets error.type only on errors;
  // an empty label is no label to Prometheus, so the text leaves it out).
  EXPECT_NE(text.find("gen_ai_server_request_duration_seconds_count{" + ok + "} 1"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("error_type=\"\""), std::string::npos);
  EXPECT_NE(text.find("gen_ai_server_request_duration_seconds_count{" + ok +
                      ",error_type=\"unavailable\"} 1"),
            std::string::npos);
  // Time to first token and per output token: successful requests only.
  EXPECT_NE(text.find("gen_ai_server_time_to_first_token_seconds_count{" + ok + "} 1"),
            std::string::npos);
  EXPECT_NE(text.find("gen_ai_server_time_to_first_token_seconds_sum{" + ok + "} 0.5"),
            std::string::npos);
  EXPECT_NE(text.find("gen_ai_server_time_per_output_token_seconds_sum{" + ok + "} 0.05"),
            std::string::npos)
      << text;
  // 0.05 s lands in the 0.05 bucket (le is inclusive).
  EXPECT_NE(
      text.find("gen_ai_server_time_per_output_token_seconds_bucket{" + ok + ",le=\"0.05\"} 1"),
      std::string::npos);
  for (const char* name :
       {"gen_ai_server_request_duration_seconds", "gen_ai_server_time_to_first_token_seconds",
        "gen_ai_server_time_per_output_token_seconds"}) {
    EXPECT_NE(text.find(std::string("# TYPE ") + name + " histogram"), std::string::npos) << name;
  }
}

TEST(GenAiServerStats, BucketsCoverSlowBoxes) {
  EXPECT_GE(GenAiDurationBounds().back(), 600);  // a 10-minute answer is still finite
  EXPECT_GE(GenAiTimeToFirstTokenBounds().back(), 600);
  EXPECT_GE(GenAiTimePerOutputTokenBounds().back(), 60);
  // OTel's recommended boundaries are all there.
  for (double b : {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
                   7.5, 10.0}) {
    const auto& v = GenAiTimeToFirstTokenBounds();
    EXPECT_NE(std::find(v.begin(), v.end(), b), v.end()) << b;
  }
}

}  // namespace
}  // namespace outpost::telemetry

#include "outpost/telemetry/genai_stats.h"

#include "outpost/telemetry/stat_registry.h"

namespace outpost::telemetry {
namespace {

constexpr const char* kProvider = "outpost";

}  // namespace

std::vector<double> GenAiDurationBounds() {
  // OTel: 0.01 ... 81.92 (doubling); then on to about 45 minutes.
  return {0.01,  0.02,  0.04,  0.08,  0.16,   0.32,   0.64,   1.28,    2.56,   5.12,
          10.24, 20.48, 40.96, 81.92, 163.84, 327.68, 655.36, 1310.72, 2621.44};
}

std::vector<double> GenAiTimeToFirstTokenBounds() {
  // OTel's, plus vLLM's 20 ... 2560.
  return {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25, 0.5, 0.75,
          1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160,  640, 2560};
}

std::vector<double> GenAiTimePerOutputTokenBounds() {
  // OTel's, plus vLLM's 5 ... 80.
  return {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
          0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
}

GenAiServerStats::GenAiServerStats(StatRegistry* registry, std::string model)
    : model_(std::move(model)) {
  const std::vector<std::string> labels = {"gen_ai_operation_name", "gen_ai_provider_name",
                                           "gen_ai_request_model", "openai_response_service_tier"};
  std::vector<std::string> with_error = labels;
  with_error.push_back("error_type");
  duration_ = &registry->Register({"gen_ai_server_request_duration_seconds",
                                   "GenAI server request duration (OTel "
                                   "gen_ai.server.request.duration).",
                                   StatType::kHistogram, with_error, GenAiDurationBounds()});
  ttft_ = &registry->Register({"gen_ai_server_time_to_first_token_seconds",
                               "Time to generate the first token, successful requests (OTel "
                               "gen_ai.server.time_to_first_token).",
                               StatType::kHistogram, labels, GenAiTimeToFirstTokenBounds()});
  tpot_ = &registry->Register({"gen_ai_server_time_per_output_token_seconds",
                               "Time per output token after the first, one value per successful "
                               "request (OTel gen_ai.server.time_per_output_token).",
                               StatType::kHistogram, labels, GenAiTimePerOutputTokenBounds()});
}

void GenAiServerStats::Record(const std::string& operation, const std::string& service_tier,
                              double duration_s, double ttft_s, int32_t output_tokens,
                              const std::string& error_type) {
  duration_->HistogramWith({operation, kProvider, model_, service_tier, error_type})
      .Observe(duration_s);
  if (!error_type.empty() || ttft_s < 0) return;
  ttft_->HistogramWith({operation, kProvider, model_, service_tier}).Observe(ttft_s);
  if (output_tokens > 1 && duration_s >= ttft_s) {
    tpot_->HistogramWith({operation, kProvider, model_, service_tier})
        .Observe((duration_s - ttft_s) / (output_tokens - 1));
  }
}

}  // namespace outpost::telemetry

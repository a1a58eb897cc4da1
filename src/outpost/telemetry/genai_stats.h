// The OpenTelemetry GenAI server metrics (semantic-conventions-genai,
// gen-ai-metrics.md) under their Prometheus names (OTel's translation: dots to
// underscores, the unit appended):
//
//   gen_ai_server_request_duration_seconds       gen_ai.server.request.duration
//   gen_ai_server_time_to_first_token_seconds    gen_ai.server.time_to_first_token
//   gen_ai_server_time_per_output_token_seconds  gen_ai.server.time_per_output_token
//
// labelled gen_ai_operation_name (chat | text_completion | embeddings),
// gen_ai_provider_name ("outpost"), gen_ai_request_model,
// openai_response_service_tier (OTel openai.response.service_tier: the
// admission class that served it — priority | default | flex | batch — so a
// batch's lines never read as users' latency) and, on the duration only,
// error_type ("" on success). Buckets are OTel's recommended ones
// extended as vLLM extends them, and further, so that a slow CPU box (minutes
// per long answer) still lands in a finite bucket. Time to first token and
// time per output token count successful requests only, as the convention
// says; time per output token is one value per request: (duration - time to
// first token) / (tokens after the first).
//
// Thread-safe.
#pragma once

#include <string>
#include <vector>

namespace outpost::telemetry {

class Family;
class StatRegistry;

std::vector<double> GenAiDurationBounds();
std::vector<double> GenAiTimeToFirstTokenBounds();
std::vector<double> GenAiTimePerOutputTokenBounds();

class GenAiServerStats {
 public:
  // Registers the three families (a second model adds its series).
  GenAiServerStats(StatRegistry* registry, std::string model);

  // One finished request. `ttft_s` < 0 when no token came; `output_tokens`
  // generated per choice; `error_type` "" when it succeeded.
  void Record(const std::string& operation, const std::string& service_tier, double duration_s,
              double ttft_s, int32_t output_tokens, const std::string& error_type);

 private:
  Family* duration_;
  Family* ttft_;
  Family* tpot_;
  const std::string model_;
};

}  // namespace outpost::telemetry

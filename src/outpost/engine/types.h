// Plain types shared by the engine and the layers above it. No llama.cpp types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace outpost::engine {

using Token = int32_t;
using SeqId = int32_t;

struct ChatMessage {
  ChatMessage() = default;
  ChatMessage(std::string r, std::string c) : role(std::move(r)), content(std::move(c)) {}
  std::string role;  // "system", "user", "assistant", "tool"
  std::string content;
  std::string tool_calls;    // assistant: the calls it made, as a JSON array ("" = none)
  std::string tool_call_id;  // tool: the call this result answers
};

// Per-request sampling settings, already validated by api/. The four
// distribution knobs are optional: unset ones take the model's defaults
// (ResolveSampling), which come from the config, else the GGUF's
// general.sampling.* keys, else llama.cpp's defaults (kBuiltinSampling).
struct SamplingParams {
  std::optional<float> temperature;     // 0 = greedy
  std::optional<float> top_p;           // 1 = off
  std::optional<int32_t> top_k;         // 0 = off
  std::optional<float> min_p;           // 0 = off
  std::optional<float> repeat_penalty;  // 1 = off
  uint32_t seed = 0;                    // used when has_seed
  bool has_seed = false;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  int32_t penalty_last_n = 64;
  std::vector<std::pair<Token, float>> logit_bias;  // -100 bans the token
  // GBNF grammar the output must match ("" = none), e.g. compiled from a JSON
  // schema. The sampler rejects tokens the grammar does not allow; EOS is
  // allowed only once the grammar is complete.
  std::string grammar;
};

// One sampled token's log-probability under the model's raw distribution,
// and the most likely alternatives at that position (best first).
struct TokenLogprob {
  Token token = 0;
  float logprob = 0;
  std::vector<std::pair<Token, float>> top;
};

// What shape the answer must have (OpenAI response_format).
struct ResponseFormat {
  enum class Type { kText, kJsonObject, kJsonSchema };
  Type type = Type::kText;
  std::string schema;  // kJsonSchema: the schema as JSON text
};

// Defaults for the optional knobs: every field set.
struct SamplingDefaults {
  float temperature = 0.8f;
  float top_p = 0.95f;
  int32_t top_k = 40;
  float min_p = 0.05f;
  float repeat_penalty = 1.0f;
};

// `p` with every unset knob taken from `d`.
inline SamplingParams ResolveSampling(SamplingParams p, const SamplingDefaults& d) {
  if (!p.temperature) p.temperature = d.temperature;
  if (!p.top_p) p.top_p = d.top_p;
  if (!p.top_k) p.top_k = d.top_k;
  if (!p.min_p) p.min_p = d.min_p;
  if (!p.repeat_penalty) p.repeat_penalty = d.repeat_penalty;
  return p;
}

}  // namespace outpost::engine

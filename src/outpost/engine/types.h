// Plain types shared by the engine and the layers above it. No llama.cpp types.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace outpost::engine {

using Token = int32_t;
using SeqId = int32_t;

struct ChatMessage {
  std::string role;  // "system", "user", "assistant", "tool"
  std::string content;
};

// Per-request sampling settings, already validated by api/.
struct SamplingParams {
  float temperature = 1.0f;  // 0 = greedy
  float top_p = 1.0f;        // 1 = off
  int32_t top_k = 0;         // 0 = off
  float min_p = 0.0f;        // 0 = off
  uint32_t seed = 0;         // used when has_seed
  bool has_seed = false;
  float repeat_penalty = 1.0f;  // 1 = off
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  int32_t penalty_last_n = 64;
  std::vector<std::pair<Token, float>> logit_bias;  // -100 bans the token
};

}  // namespace outpost::engine

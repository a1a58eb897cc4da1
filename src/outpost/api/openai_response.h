// Rendering of OpenAI response bodies and stream chunks, field by field as in
// OpenAI's published schema (openai/openai-openapi): `message.refusal` and
// `logprobs` are present as null when unused, errors use the error envelope.
// Core types hold no JSON; this file is where results become wire format.
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "outpost/scheduler/request.h"
#include "outpost/util/random.h"

namespace outpost::api {

// Fields every response of one request shares.
struct ResponseMeta {
  std::string id;       // "chatcmpl-..." / "cmpl-..."
  int64_t created = 0;  // unix seconds
  std::string model;
  std::string system_fingerprint;        // identifies model file + build
  std::string service_tier = "default";  // the admission class's tier (ServiceTierName)
};

// One function call the model asked for (chat, with tools), or in a stream
// chunk its delta: the first delta of a call has id and name, later ones
// (id empty) only argument text to append.
struct ToolCall {
  std::string id;  // "call_..."
  std::string name;
  std::string arguments;  // JSON text
  int index = -1;         // stream: the call's position in the message
};

// One choice of an answer, or its part in one stream chunk.
struct Choice {
  int index = 0;
  std::string text;       // chat: message content; completions: text
  std::string reasoning;  // chat: a thinking model's reasoning (reasoning_content)
  scheduler::FinishReason finish = scheduler::FinishReason::kNone;
  bool tool_calls_finish = false;  // finish_reason "tool_calls" (chat)
  std::vector<ToolCall> tool_calls;
  // Per-token log-probabilities when asked for (logprobs field), else null.
  bool has_logprobs = false;
  std::vector<scheduler::TokenInfo> logprobs;
  int64_t text_offset = 0;  // completions: offset of text in the whole output
};

std::string ChatCompletionBody(const ResponseMeta& m, const std::vector<Choice>& choices,
                               const scheduler::Usage& usage);
// One streamed chat chunk for choices[i]. role_start: the choice's first chunk
// (delta.role = assistant); content_delta: false leaves delta.content out.
std::string ChatChunk(const ResponseMeta& m, const Choice& c, bool role_start,
                      bool content_delta = true);
std::string CompletionBody(const ResponseMeta& m, const std::vector<Choice>& choices,
                           const scheduler::Usage& usage);
std::string CompletionChunk(const ResponseMeta& m, const Choice& c);
// The final usage-only chunk (stream_options.include_usage): choices is empty.
std::string UsageChunk(const ResponseMeta& m, bool chat, const scheduler::Usage& usage);

// A fresh id with the given prefix: prefix + 24 random alphanumerics.
std::string NewId(const std::string& prefix, util::Random& random = util::RealRandom());

}  // namespace outpost::api

// CompletionCall — one /v1/chat/completions, /v1/completions or /v1/responses request, parsed
// and validated by api/ into types the router acts on. No JSON and no HTTP:
// the same call can come from a batch file or a test.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "outpost/engine/types.h"
#include "outpost/router/route_types.h"
#include "outpost/router/tool_calls.h"
#include "outpost/scheduler/request.h"

namespace outpost::router {

// kResponses: a chat request from OpenAI's Responses API; answered here in
// its own shape, relayed to an upstream's /v1/responses as it came.
enum class Endpoint { kChat, kCompletion, kResponses };
// "/v1/chat/completions", "/v1/completions", "/v1/responses"
const char* EndpointPath(Endpoint e);

// One of several prompts of a /v1/completions request: text or token ids.
struct BatchPrompt {
  std::string text;
  std::vector<engine::Token> tokens;
};

// The request body's meaning (OpenAI semantics), every field already checked.
struct CompletionRequest {
  Endpoint endpoint = Endpoint::kChat;
  std::string model;                          // empty: the default model
  std::vector<engine::ChatMessage> messages;  // chat and responses
  std::string prompt;                         // completions (text)
  std::vector<engine::Token> prompt_tokens;   // completions given as token ids
  // Completions with several prompts (2 or more; prompt/prompt_tokens unused):
  // api/ answers them as one call per prompt, choices numbered prompt × n + j.
  std::vector<BatchPrompt> batch_prompts;
  bool stream = false;
  bool include_usage = false;
  engine::SamplingParams sampling;
  engine::ResponseFormat response_format;
  int32_t max_tokens = -1;  // -1: not given
  std::vector<std::string> stop;
  bool echo = false;  // completions only
  // Completions: fill in the middle (OpenAI's `suffix`; llama-server's
  // /infill also its cursor text and other files). The text before the gap
  // is `prompt` (or each of batch_prompts); infill->prefix is unused here.
  std::optional<engine::InfillInput> infill;
  int32_t top_logprobs = -1;  // per-token logprobs with this many alternatives; -1 = none
  int32_t n = 1;              // choices
  bool ignore_eos = false;  // extension (as llama.cpp's server): generate max_tokens whatever comes
  // Extension (as llama.cpp's server): false computes the whole prompt even
  // when a cached prefix exists (results independent of what ran before).
  bool cache_prompt = true;
  ToolSpec tools;
  // Chat: thinking on or off, the reasoning split, template variables
  // (reasoning_effort, reasoning_format, chat_template_kwargs).
  engine::ChatOptions chat_options;
  std::string user;  // OpenAI's end-user id (a canary keeps one user on one version)
  // OpenAI's service_tier: "priority", "default"/"auto" (kInteractive) or
  // "flex"; unset when not given.
  std::optional<scheduler::Priority> service_tier;
};

struct CompletionCall {
  CompletionRequest request;
  std::string body;  // the request body as received: relayed upstream unchanged
  std::string id;    // "chatcmpl-…" / "cmpl-…"
  scheduler::Priority priority = scheduler::Priority::kInteractive;
  // Who is asking and what they asked for, from the headers.
  std::string api_key;                       // bearer token: selects the tenant
  std::optional<DataClass> data_class;       // X-Data-Class: may only make it stricter
  Tier tier = Tier::kAny;                    // X-Outpost-Tier
  std::optional<int64_t> latency_budget_ms;  // X-Latency-Budget-Ms: overrides the tenant's
  bool forwarded = false;                    // another Outpost sent it: never forward again
  // Answered on this node whatever the routing: an endpoint whose answer
  // shape no upstream's OpenAI answer gives (llama-server's /infill).
  bool local_only = false;
  std::string session_id;         // X-Session-Id: a conversation, for sticky canaries
  int64_t max_queue_wait_ms = 0;  // GenerationRequest's: 0 = the scheduler's

  // What keeps a conversation on one model version during a canary: the
  // session id, else the user field, else the API key ("" = none: any).
  const std::string& sticky_key() const {
    return !session_id.empty() ? session_id : !request.user.empty() ? request.user : api_key;
  }
};

}  // namespace outpost::router

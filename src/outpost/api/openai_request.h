// Parsing and validation of OpenAI request bodies into plain request values.
//
// Every rule lives here: a body that passes is safe to hand to the scheduler
// (ranges checked, types checked); one that fails yields InvalidArgument whose
// message and param name the offending field. No exceptions escape. Pure;
// thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "outpost/engine/types.h"
#include "outpost/scheduler/request.h"
#include "outpost/util/status.h"

namespace outpost::api {

enum class Endpoint { kChat, kCompletion };

struct ParsedRequest {
  Endpoint endpoint = Endpoint::kChat;
  std::string model;                          // empty: the default model
  std::vector<engine::ChatMessage> messages;  // chat
  std::string prompt;                         // completions (text)
  std::vector<engine::Token> prompt_tokens;   // completions given as token ids
  bool stream = false;
  bool include_usage = false;
  engine::SamplingParams sampling;
  int32_t max_tokens = -1;  // -1: not given
  std::vector<std::string> stop;
  bool echo = false;        // completions only
  bool ignore_eos = false;  // extension (as llama.cpp's server): generate max_tokens whatever comes
  bool wants_tools = false;  // tools or response_format json_schema requested
};

// Parses a /v1/chat/completions or /v1/completions body. `n_vocab` bounds
// logit_bias keys and token-id prompts.
StatusOr<ParsedRequest> ParseRequest(Endpoint endpoint, std::string_view body, int32_t n_vocab);

// Checks token ids (logit_bias keys, token prompts) against a vocabulary of
// n_vocab tokens; ParseRequest with INT32_MAX defers this check until the
// model is known.
Status ValidateTokenIds(const ParsedRequest& r, int32_t n_vocab);

// "interactive" (default) or "batch", from the X-Outpost-Priority header.
StatusOr<scheduler::Priority> ParsePriority(std::string_view header_value);

}  // namespace outpost::api

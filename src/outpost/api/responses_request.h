// Parsing of an OpenAI Responses API body (POST /v1/responses) into the chat
// request it means, plus the request fields its Response object repeats.
//
// `instructions` becomes the first (system) message; `input` — a string, or
// items: messages (input_text / output_text parts), function_call and
// function_call_output — becomes the conversation, an assistant message
// taking the function calls that follow it, as llama.cpp's server reads
// them. Function tools, tool_choice and text.format become their chat forms;
// then every chat rule applies (ParseRequest) and its errors are renamed to
// the Responses fields (max_tokens → max_output_tokens, response_format →
// text.format, messages → input). What Outpost cannot do is refused by name,
// never ignored: hosted tools (web_search, file_search, …), images, files
// and audio, and stored state (previous_response_id, conversation,
// background, item_reference) — Outpost keeps no responses. Reasoning items
// from an earlier answer are skipped (a model that does not reason ignores
// them). Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "outpost/api/openai_request.h"
#include "outpost/util/status.h"

namespace outpost::api {

struct ResponsesRequest {
  ParsedRequest chat;  // endpoint kResponses; messages, sampling, tools, format
  // A JSON object: the request's settings as the Response object states them
  // (instructions, max_output_tokens, metadata, parallel_tool_calls,
  // temperature, text, tool_choice, tools, top_logprobs, top_p, truncation,
  // user, …), defaults filled in.
  std::string echo;
};

// Errors: InvalidArgument naming the field (param) and, for a value out of
// range, the limit.
StatusOr<ResponsesRequest> ParseResponsesRequest(std::string_view body);

// A chat rule's error (from here, or from the model's checks after the
// parse: a tool's parameters, a schema the grammar cannot enforce, a prompt
// too long) in the Responses request's own field names.
Status ForResponses(Status chat_error);

}  // namespace outpost::api

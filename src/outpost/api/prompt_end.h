// How a chat request's prompt ends: vLLM's add_generation_prompt and
// continue_final_message (true, or llama-server's "content" /
// "reasoning_content"), which continues the last message, an assistant's: a
// prefilled answer. Continuing with `true` picks the thinking when the
// message holds only thinking, as llama.cpp's chat code does. Generation
// never starts without the assistant header: add_generation_prompt false
// alone is refused, unless the body is only counted (/tokenize). Pure;
// thread-safe.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "outpost/api/openai_request.h"
#include "outpost/util/status.h"

namespace outpost::api {

// Sets r->chat_options.ending from the body `j`, whose messages, tools and
// response_format `r` already holds. Errors: InvalidArgument naming the
// field (a combination that cannot work: with tools, response_format or
// grammar; on a message that is not the assistant's or holds tool calls; …).
Status ParsePromptEnd(const nlohmann::json& j, bool for_tokenize, ParsedRequest* r);

}  // namespace outpost::api

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
// and audio, and stored prompts. `background` needs `store` (the handler
// runs it: background_runs.h). An item_reference in
// `input` is replaced by the stored item it names. Reasoning items from an
// earlier answer are skipped (a model that does not reason ignores them).
//
// previous_response_id continues a stored response (response_store.h): its
// items come before this input, after this request's instructions (the
// earlier instructions are not carried over, as in OpenAI's API).
// `conversation` (an id, or {"id": ...}; not with previous_response_id) puts
// a conversation's items (conversation_store.h) there instead. Pure but for
// the lookups it is given; thread-safe if they are.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "outpost/api/openai_request.h"
#include "outpost/util/random.h"
#include "outpost/util/status.h"

namespace outpost::api {

struct ResponsesRequest {
  ParsedRequest chat;  // endpoint kResponses; messages, sampling, tools, format
  // A JSON object: the request's settings as the Response object states them
  // (instructions, max_output_tokens, metadata, parallel_tool_calls,
  // previous_response_id, store, temperature, text, tool_choice, tools,
  // top_logprobs, top_p, truncation, user, …), defaults filled in.
  std::string echo;
  bool store = false;                // `store` (default true), and the server stores responses
  std::string previous_response_id;  // "" = none
  std::string conversation_id;       // "" = none
  bool truncate = false;             // truncation: "auto"
  bool background = false;           // `background` (needs store; the server stores)
  // This request's input as items (JSON array), each with a type, its content
  // as parts and an id: what GET /v1/responses/{id}/input_items lists.
  std::string input_items;
  // The conversation before the answer as items (JSON array): the earlier
  // response's or the conversation's, then this input as it came. A stored
  // answer appends its output items to it.
  std::string context;
  // With previous_response_id, conversation or an item_reference: the body
  // with `context` as its input and neither field — what an upstream is sent
  // (it never stored the earlier turns or the items). Else "".
  std::string expanded_body;
};

struct ResponsesParseOptions {
  // The items (JSON array) of the stored response an id names, or NotFound
  // (param previous_response_id). Null: the server stores no responses, so
  // previous_response_id is refused and `store` is answered false.
  std::function<StatusOr<std::string>(const std::string& id)> previous;
  // The stored item (a JSON object) an item_reference names, or NotFound
  // naming `param`. Null: item_reference is refused.
  std::function<StatusOr<std::string>(const std::string& id, const std::string& param)> item;
  // A conversation's items (JSON array), or NotFound (param conversation).
  // Null: the server keeps no conversations, so `conversation` is refused.
  std::function<StatusOr<std::string>(const std::string& id)> conversation;
  util::Random* random = nullptr;  // input item ids; null: util::RealRandom()
};

// Errors: InvalidArgument naming the field (param) and, for a value out of
// range, the limit; the lookup's NotFound.
StatusOr<ResponsesRequest> ParseResponsesRequest(std::string_view body,
                                                 const ResponsesParseOptions& options = {});

// Items a client adds to a conversation (POST /v1/conversations, .../items):
// each checked as an input item of a Responses request (errors name
// field[i]), returned as input_items lists them — typed, content as parts,
// an id each (kept if the item has one).
StatusOr<nlohmann::json> ListedInputItems(const nlohmann::json& items, const std::string& field,
                                          util::Random& random);

// Finds the item (a JSON object) an item_reference's `id` names, or
// NotFound naming `param`.
using ItemLookup =
    std::function<StatusOr<std::string>(const std::string& id, const std::string& param)>;

// Each {"type": "item_reference", "id"} in `items` (a JSON array; anything
// else is left for the item checks) replaced by the item `lookup` finds;
// `*referenced` (optional) set if there was one. Errors name field[i]:
// InvalidArgument for a missing id, the lookup's NotFound, 400
// unsupported_parameter when `lookup` is null (no stored responses).
Status ResolveItemReferences(nlohmann::json* items, const std::string& field,
                             const ItemLookup& lookup, bool* referenced = nullptr);

// A chat rule's error (from here, or from the model's checks after the
// parse: a tool's parameters, a schema the grammar cannot enforce, a prompt
// too long) in the Responses request's own field names.
Status ForResponses(Status chat_error);

}  // namespace outpost::api

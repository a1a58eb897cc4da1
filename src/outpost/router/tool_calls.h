// Tool calling on the local model, in a generic format that works with any
// chat model, whether or not its template knows about tools.
//
// The pinned llama.cpp parses tool calls only for templates that declare
// them (Llama 3.x, Qwen, Hermes, ...); for others (the default SmolLM2, Gemma)
// it ignores `tools`. Outpost instead describes the functions in a system
// turn and constrains the answer with a grammar (from a JSON schema) to
//
//     {"tool_calls": [{"name": "<function>", "arguments": {...}}, ...]}
//   or {"response": "<text for the user>"}        (tool_choice auto only)
//
// so that every call names a declared function with arguments that follow its
// parameter schema. Earlier turns are rendered the same way: an assistant's
// tool_calls as that JSON, a tool result as a user turn naming the call.
// Pure; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "outpost/engine/types.h"
#include "outpost/util/status.h"

namespace outpost::router {

struct ToolFunction {
  std::string name;
  std::string description;
  std::string parameters;  // JSON schema text; "" = any object
};

struct ToolChoice {
  enum class Mode { kAuto, kNone, kRequired, kFunction };
  Mode mode = Mode::kAuto;
  std::string function;  // kFunction
};

struct ToolSpec {
  std::vector<ToolFunction> functions;
  ToolChoice choice;
  bool parallel = true;  // parallel_tool_calls: several calls in one turn
  bool active() const { return !functions.empty() && choice.mode != ToolChoice::Mode::kNone; }
};

// One call the model made.
struct ParsedToolCall {
  std::string name;
  std::string arguments;  // JSON text
};

// The model's answer in the generic format.
struct ToolAnswer {
  std::string content;  // "response" (auto), else empty
  std::vector<ParsedToolCall> calls;
};

// Messages (roles system/user/assistant/tool, with ChatMessage::tool_calls and
// tool_call_id) → plain turns any template renders, with the tool
// description prepended as (or merged into) the system turn.
std::vector<engine::ChatMessage> ToolMessages(const std::vector<engine::ChatMessage>& messages,
                                              const ToolSpec& tools);

// The JSON schema (text) the answer must follow.
std::string ToolAnswerSchema(const ToolSpec& tools);

// Parses a complete answer. Errors: InvalidArgument when it is not the format
// (only possible when generation was cut short, e.g. by max_tokens).
StatusOr<ToolAnswer> ParseToolAnswer(const std::string& text);

}  // namespace outpost::router

// Tool calling on the local model.
//
// A chat template with its own tool-call format (Llama 3.x, Qwen, Hermes,
// Mistral, ...; engine::Engine::NativeToolCalls) gets the tools in that
// format: llama.cpp's chat code renders them, constrains the calls with a
// lazy grammar and parses them back (engine/chat_format.h). NativeTools()
// turns a ToolSpec into what it takes.
//
// For templates without one (the default SmolLM2, Gemma) Outpost uses a
// generic format that works with any chat model: it describes the functions
// in a system turn and constrains the answer with a grammar (from a JSON
// schema) to
//
//     {"tool_calls": [{"name": "<function>", "arguments": {...}}, ...]}
//   or {"response": "<text for the user>"}        (tool_choice auto only)
//
// so that every call names a declared function with arguments that follow its
// parameter schema. Earlier turns are rendered the same way: an assistant's
// tool_calls as that JSON, a tool result as a user turn naming the call.
// Pure; thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "outpost/engine/types.h"
#include "outpost/util/status.h"

namespace outpost::router {

using engine::ToolFunction;

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

// The tools as a template's own format takes them: tool_choice required
// stays required, a named function becomes required with only that function.
// REQUIRES: tools.active().
engine::ChatTools NativeTools(const ToolSpec& tools);

// Messages (roles system/user/assistant/tool, with ChatMessage::tool_calls and
// tool_call_id) → plain turns any template renders, with the tool
// description prepended as (or merged into) the system turn.
std::vector<engine::ChatMessage> ToolMessages(const std::vector<engine::ChatMessage>& messages,
                                              const ToolSpec& tools);

// The JSON schema (text) the answer must follow.
std::string ToolAnswerSchema(const ToolSpec& tools);

// Parses a complete answer. Errors: InvalidArgument when it is not the format
// (only possible when generation was cut short, e.g. by max_tokens).
StatusOr<engine::ParsedAnswer> ParseToolAnswer(const std::string& text);

// What a partial answer (a stream so far) tells for certain: the response
// text so far, and the calls whose name is complete with their arguments'
// raw JSON text so far. Errors: InvalidArgument when the text has left the
// format.
StatusOr<engine::ParsedAnswer> ParsePartialToolAnswer(const std::string& text);

// ParseToolAnswer / ParsePartialToolAnswer as an engine::AnswerParser.
// Arguments are the model's own JSON text, so a stream's pieces add up to
// the final arguments exactly.
std::shared_ptr<const engine::AnswerParser> GenericToolParser();

}  // namespace outpost::router

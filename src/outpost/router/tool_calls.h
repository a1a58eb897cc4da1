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
//   or {"response": <JSON following the response_format schema>}
//
// The last is how tools and response_format work together (OpenAI lets an
// answer either call or follow the format; an agent with tools and a typed
// output sends both), on any template: llama.cpp's chat code drops the tools
// when a schema is given, so a template with its own format uses this one
// then. The response's content is the JSON text of that value.
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
// `response_schema`: "" = a direct answer is text, else the JSON schema
// (text) it follows, as for ToolAnswerSchema.
std::vector<engine::ChatMessage> ToolMessages(const std::vector<engine::ChatMessage>& messages,
                                              const ToolSpec& tools,
                                              const std::string& response_schema = "");

// The JSON schema (text) the answer must follow; under tool_choice auto a
// direct answer is {"response": text}, or {"response": <value>} following
// `response_schema` when one is given.
std::string ToolAnswerSchema(const ToolSpec& tools, const std::string& response_schema = "");

// Parses a complete answer. json_response: the response is a JSON value
// (response_format), and the content is its text as the model wrote it.
// Errors: InvalidArgument when it is not the format (only possible when
// generation was cut short, e.g. by max_tokens).
StatusOr<engine::ParsedAnswer> ParseToolAnswer(const std::string& text, bool json_response = false);

// What a partial answer (a stream so far) tells for certain: the response
// text so far (a JSON response: its text so far), and the calls whose name
// is complete with their arguments' raw JSON text so far. Errors:
// InvalidArgument when the text has left the format.
StatusOr<engine::ParsedAnswer> ParsePartialToolAnswer(const std::string& text,
                                                      bool json_response = false);

// ParseToolAnswer / ParsePartialToolAnswer as an engine::AnswerParser.
// Arguments are the model's own JSON text, so a stream's pieces add up to
// the final arguments exactly; so is a JSON response. `thinking` (a
// thinking template's parser; null = none) first splits the thinking off,
// and the rest is read as the format.
std::shared_ptr<const engine::AnswerParser> GenericToolParser(
    bool json_response = false, std::shared_ptr<const engine::AnswerParser> thinking = nullptr);

}  // namespace outpost::router

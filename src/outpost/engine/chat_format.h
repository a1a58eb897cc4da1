// The bridge between Outpost's chat types (engine/types.h) and llama.cpp's
// common chat code (common/chat.h): messages and tools in, and the rendered
// prompt out with, for tools, the grammar that constrains the calls and the
// PEG parser that reads them back (the same code llama-server uses).
//
// Pure functions over their arguments; the parsers they make are immutable
// and thread-safe.
#pragma once

#include <string>
#include <vector>

#include "outpost/engine/json_schema_grammar.h"
#include "outpost/engine/types.h"

struct common_chat_templates;
struct common_chat_templates_inputs;
struct common_chat_params;
struct llama_vocab;

namespace outpost::engine {

// Sets in->messages from `messages` (an assistant turn's tool_calls JSON,
// reasoning and a tool turn's tool_call_id become llama.cpp's fields; a tool
// turn is given the name of the call it answers), with tools in->tools,
// tool_choice and parallel_tool_calls, and from `options` the reasoning
// format, enable_thinking, the template's extra variables and how the
// prompt ends (add_generation_prompt, continue_final_message). Errors:
// InvalidArgument naming the message whose tool_calls do not parse.
Status FillChatInputs(const std::vector<ChatMessage>& messages, const ChatTools* tools,
                      const ChatOptions& options, common_chat_templates_inputs* in);

// The tools' parameters as llama.cpp's chat code should build their grammar
// from (json_schema_grammar.h ReadyJsonSchema: patterns rewritten, bounded
// numbers marked), one per function, markers numbered apart. The prompt
// keeps the parameters as given; ToolGrammar() builds the grammar.
// Errors: InvalidArgument naming tools[i].function.parameters.
StatusOr<std::vector<ReadySchema>> ReadyToolSchemas(const ChatTools& tools);

// The grammar llama.cpp builds for `in` (FillChatInputs' result) with each
// function's parameters replaced by its ready schema, the number rules
// spliced in. Throws as common_chat_templates_apply() does.
std::string ToolGrammar(const common_chat_templates* templates, common_chat_templates_inputs in,
                        const std::vector<ReadySchema>& ready);

// The text that opens a call in the format of `auto_params` (rendered with
// tool_choice auto): its first trigger word, e.g. "<tool_call>\n"; "" when
// the format has none (Llama 3.x's bare JSON).
std::string CallOpening(const common_chat_params& auto_params);

// What the template produced, as a ChatPrompt: the prompt, the stops, the
// control tokens whose text is part of the answer, the thinking block's tags
// (when the template has one), and the parser (which splits off the
// thinking when options.parse_reasoning; unset counts as true, the caller
// resolves it). With tools (null = none) also the grammar and its triggers
// (a trigger word that is one token becomes a token trigger); the parser
// then keeps only the first call unless tools->parallel. A prompt that
// continues the last message (options.ending) has its parser leave that
// message's text out of what it returns.
//
// `opening` (tool_choice required; from CallOpening) is appended to the
// prompt, so the answer starts inside a call: llama.cpp's required grammar
// lets free text come first, which a small model fills until the context
// ends. The grammar is fed the opening and the parser reads it back.
ChatPrompt ToChatPrompt(const common_chat_params& params, const ChatTools* tools,
                        const ChatOptions& options, const std::string& opening,
                        const llama_vocab* vocab);

}  // namespace outpost::engine

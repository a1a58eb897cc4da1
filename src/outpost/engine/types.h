// Plain types shared by the engine and the layers above it. No llama.cpp types.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "outpost/util/status.h"

namespace outpost::engine {

using Token = int32_t;
using SeqId = int32_t;

// Sampled when no token is possible: the request's grammar allows none.
inline constexpr Token kNoToken = -1;

struct ChatMessage {
  ChatMessage() = default;
  ChatMessage(std::string r, std::string c) : role(std::move(r)), content(std::move(c)) {}
  std::string role;  // "system", "user", "assistant", "tool"
  std::string content;
  std::string tool_calls;    // assistant: the calls it made, as a JSON array ("" = none)
  std::string tool_call_id;  // tool: the call this result answers
  std::string reasoning;     // assistant: its thinking (templates that show it again)
};

// A function a chat request lets the model call (OpenAI `tools`).
struct ToolFunction {
  std::string name;
  std::string description;
  std::string parameters;  // JSON schema text; "" = takes no arguments
};

// The tools handed to a template that has its own tool-call format.
struct ChatTools {
  std::vector<ToolFunction> functions;  // tool_choice naming one: only that one
  bool required = false;                // the answer must call (tool_choice required/named)
  bool parallel = true;                 // several calls in one turn
};

// One call the model made.
struct ToolCall {
  std::string id;  // as the format carries it; "" = none (the API assigns one)
  std::string name;
  std::string arguments;  // JSON text
};

// A chat answer split into what the user reads, the calls it makes, and the
// thinking that came before (models that reason: Qwen 3, DeepSeek R1, ...).
struct ParsedAnswer {
  std::string reasoning;
  std::string content;
  std::vector<ToolCall> tool_calls;
};

// How a conversation is rendered for, and its answer read from, a model that
// thinks before it answers. Templates without a thinking block ignore it.
struct ChatOptions {
  // Split the thinking off the answer (ParsedAnswer::reasoning). False: it
  // stays in the content, tags and all (llama-server's reasoning_format
  // none). Unset: the model's default (ModelOptions::split_reasoning).
  std::optional<bool> parse_reasoning;
  // False asks the template not to think (Qwen 3's enable_thinking: the
  // prompt then holds an empty thinking block); where the prompt always
  // opens the block (DeepSeek R1's), llama.cpp's chat code closes it there.
  bool enable_thinking = true;
  // More template variables (chat_template_kwargs, reasoning_effort): name →
  // JSON text. The caller keeps out the names the template is given already.
  std::vector<std::pair<std::string, std::string>> template_kwargs;
  // How the prompt ends. kNewTurn: with the template's assistant header, the
  // answer a new message. kContinueContent / kContinueReasoning: the last
  // message (REQUIRES an assistant's, without tool calls) is left open and
  // the answer continues its content / its thinking (vLLM's and
  // llama-server's continue_final_message: a prefilled answer; the answer
  // parsed holds only what the model added). kNoHeader: the messages alone
  // (add_generation_prompt false; for counting tokens, not for generating).
  enum class Ending { kNewTurn, kContinueContent, kContinueReasoning, kNoHeader };
  Ending ending = Ending::kNewTurn;
};

// Turns an answer's raw text into a ParsedAnswer, for one chat format.
// Immutable once made; thread-safe.
class AnswerParser {
 public:
  virtual ~AnswerParser() = default;
  // `text` is the answer so far. partial: more may follow (streaming), so
  // only what is certain is returned, and a later call's result extends an
  // earlier one's (content and arguments grow; calls are only added).
  // Errors (complete text only): InvalidArgument when the text does not
  // follow the format (generation cut short by max_tokens, say).
  virtual StatusOr<ParsedAnswer> Parse(const std::string& text, bool partial) const = 0;
  // True if the answer may hold one call at most (parallel calls off), so
  // generation can end as soon as Ended() says that call is whole.
  virtual bool OneCall() const { return false; }
  // True if `text` (the answer so far) is a whole answer holding a call and
  // OneCall(): nothing more may follow. Some formats' grammars (Qwen's,
  // Hermes') let a model go on writing calls that the parser then drops.
  virtual bool Ended(const std::string& text) const { return false; }
};

// A template's thinking block: the tags around a model's reasoning, and
// whether the prompt opened it, so that the answer starts inside it
// (DeepSeek R1's prompt ends with "<think>\n"). end empty: no block.
struct ThinkingBlock {
  std::string start;  // "<think>"
  std::string end;    // "</think>"
  bool open = false;
};

// Where a lazy grammar starts to apply (llama.cpp's common_grammar_trigger;
// Type has its enum's values, checked in engine/sampler.cc).
struct GrammarTrigger {
  enum class Type { kToken, kWord, kPattern, kPatternFull };
  Type type = Type::kWord;
  std::string value;  // the word or regular expression
  Token token = -1;   // kToken
};

// Per-request sampling settings, already validated by api/. The four
// distribution knobs are optional: unset ones take the model's defaults
// (ResolveSampling), which come from the config, else the GGUF's
// general.sampling.* keys, else llama.cpp's defaults (kBuiltinSampling).
struct SamplingParams {
  std::optional<float> temperature;     // 0 = greedy
  std::optional<float> top_p;           // 1 = off
  std::optional<int32_t> top_k;         // 0 = off
  std::optional<float> min_p;           // 0 = off
  std::optional<float> repeat_penalty;  // 1 = off
  uint32_t seed = 0;                    // used when has_seed
  bool has_seed = false;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  int32_t penalty_last_n = 64;
  std::vector<std::pair<Token, float>> logit_bias;  // -100 bans the token
  // GBNF grammar the output must match ("" = none), e.g. compiled from a JSON
  // schema. The sampler rejects tokens the grammar does not allow; EOS is
  // allowed only once the grammar is complete.
  std::string grammar;
  // Lazy: the grammar applies only from the first trigger on (a tool-call
  // format lets the model talk freely until it opens a call).
  bool grammar_lazy = false;
  std::vector<GrammarTrigger> grammar_triggers;
  // Text the prompt already ends with that the grammar starts with (the
  // assistant prefix of tool-call grammars); fed to the grammar first.
  std::string grammar_prefix;
  // A thinking model's block (from the chat prompt; end empty = none). At
  // most thinking_budget tokens go inside it (-1 = no limit; unset: the
  // model's default); then the sampler writes thinking_budget_message and
  // the closing tag (llama.cpp's reasoning-budget sampler). A lazy (tool
  // call) grammar does not apply inside the block.
  ThinkingBlock thinking;
  std::optional<int32_t> thinking_budget;
  std::string thinking_budget_message;
};

// One sampled token's log-probability under the model's raw distribution,
// and the most likely alternatives at that position (best first).
struct TokenLogprob {
  Token token = 0;
  float logprob = 0;
  std::vector<std::pair<Token, float>> top;
};

// A conversation rendered by the model's chat template, with what generation
// needs to follow the template's format.
struct ChatPrompt {
  std::string text;
  std::vector<std::string> stops;  // stop strings the format adds ("<|im_end|>")
  // Set only when tools were rendered in the template's own format.
  std::string grammar;  // GBNF the calls must follow
  bool grammar_lazy = false;
  std::vector<GrammarTrigger> grammar_triggers;
  std::string grammar_prefix;
  std::vector<Token> special_tokens;  // control tokens whose text is part of the answer
  // Reads the answer back: set with tools in the template's format, and for
  // a template with a thinking block when ChatOptions::parse_reasoning.
  std::shared_ptr<const AnswerParser> parser;
  ThinkingBlock thinking;
};

// What shape the answer must have (OpenAI response_format).
struct ResponseFormat {
  // kGrammar: llama-server's `grammar` field, GBNF text the client wrote.
  enum class Type { kText, kJsonObject, kJsonSchema, kGrammar };
  Type type = Type::kText;
  std::string schema;   // kJsonSchema: the schema as JSON text
  std::string grammar;  // kGrammar: the GBNF text
};

// Defaults for the optional knobs: every field set.
struct SamplingDefaults {
  float temperature = 0.8f;
  float top_p = 0.95f;
  int32_t top_k = 40;
  float min_p = 0.05f;
  float repeat_penalty = 1.0f;
  int32_t thinking_budget = -1;  // no limit
};

// `p` with every unset knob taken from `d`.
inline SamplingParams ResolveSampling(SamplingParams p, const SamplingDefaults& d) {
  if (!p.temperature) p.temperature = d.temperature;
  if (!p.top_p) p.top_p = d.top_p;
  if (!p.top_k) p.top_k = d.top_k;
  if (!p.min_p) p.min_p = d.min_p;
  if (!p.repeat_penalty) p.repeat_penalty = d.repeat_penalty;
  if (!p.thinking_budget) p.thinking_budget = d.thinking_budget;
  return p;
}

}  // namespace outpost::engine

#include "outpost/engine/chat_format.h"

#include <chat.h>
#include <common.h>
#include <llama.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "outpost/util/json_text.h"

namespace outpost::engine {
namespace {

using nlohmann::json;

// The parser llama.cpp chose for the prompt's format (its PEG arena): tool
// calls, thinking, or both.
class ChatAnswerParser : public AnswerParser {
 public:
  // `prefilled`: the prompt ends inside the answer (a continued last
  // message), whose text so far the parser reads as part of the answer;
  // Parse() leaves it out, returning only what the model added.
  ChatAnswerParser(const common_chat_params& p, std::string opening, bool parallel, bool reasoning,
                   bool prefilled)
      : params_(p), opening_(std::move(opening)), parallel_(parallel), reasoning_(reasoning) {
    params_.parser.load(p.parser);
    // Without it the thinking stays in the content, tags and all.
    params_.reasoning_format =
        reasoning ? COMMON_REASONING_FORMAT_DEEPSEEK : COMMON_REASONING_FORMAT_NONE;
    if (prefilled) {
      if (auto a = ParseWhole("", /*partial=*/true); a.ok()) prefill_ = std::move(a).value();
    }
  }

  StatusOr<ParsedAnswer> Parse(const std::string& text, bool partial) const override {
    auto a = ParseWhole(text, partial);
    if (!a.ok()) return a;
    DropPrefill(prefill_.reasoning, &a->reasoning);
    DropPrefill(prefill_.content, &a->content);
    return a;
  }

  bool OneCall() const override { return !parallel_; }

  bool Ended(const std::string& text) const override {
    if (parallel_ || params_.parser.empty()) return false;
    // common_chat_parse() is lenient (a text cut inside a call parses); a
    // strict parse succeeds only on a whole answer.
    common_peg_parse_context ctx(params_.generation_prompt + opening_ + text,
                                 COMMON_PEG_PARSE_FLAG_NONE);
    try {
      if (!params_.parser.parse(ctx).success()) return false;
    } catch (const std::exception&) {
      return false;
    }
    auto a = Parse(text, /*partial=*/false);
    return a.ok() && !a->tool_calls.empty();
  }

 private:
  // What the prefill was parsed as is a prefix of what it and more parse
  // as; while the answer has added nothing, nothing is left.
  static void DropPrefill(const std::string& prefill, std::string* s) {
    if (prefill.empty()) return;
    if (s->compare(0, prefill.size(), prefill) == 0) {
      s->erase(0, prefill.size());
    } else if (prefill.compare(0, s->size(), *s) == 0) {
      s->clear();
    }
  }

  // The answer with the prefill (the parser starts at the generation prompt).
  StatusOr<ParsedAnswer> ParseWhole(const std::string& text, bool partial) const {
    common_chat_msg m;
    try {
      m = common_chat_parse(opening_ + text, partial, params_);
    } catch (const std::exception& e) {
      return Status::InvalidArgument(std::string("the answer does not follow the template's "
                                                 "format: ") +
                                     e.what());
    }
    ParsedAnswer a;
    a.reasoning = std::move(m.reasoning_content);
    a.content = std::move(m.content);
    // Some formats keep the whitespace around the block ("<think>\n",
    // "</think>\n\n"), also around an empty one; its start is layout, not
    // text. (The start only: a streamed part must stay a prefix of the whole.)
    if (reasoning_) {
      a.reasoning.erase(0, std::min(a.reasoning.size(), a.reasoning.find_first_not_of(" \t\r\n")));
      a.content.erase(0, std::min(a.content.size(), a.content.find_first_not_of(" \t\r\n")));
    }
    for (auto& c : m.tool_calls) {
      // Some formats' grammars repeat the call section even without parallel
      // calls (Qwen's, Hermes'); the first call is the answer.
      if (!parallel_ && !a.tool_calls.empty()) break;
      a.tool_calls.push_back({std::move(c.id), std::move(c.name), std::move(c.arguments)});
    }
    return a;
  }

  common_chat_parser_params params_;
  const std::string opening_;  // forced into the prompt; the model did not write it
  const bool parallel_;
  const bool reasoning_;  // the thinking is split off
  ParsedAnswer prefill_;  // what the prompt's continued message parses as
};

std::string Parameters(const ToolFunction& f) {
  return f.parameters.empty() ? R"({"type":"object","properties":{}})" : f.parameters;
}

}  // namespace

Status FillChatInputs(const std::vector<ChatMessage>& messages, const ChatTools* tools,
                      const ChatOptions& options, common_chat_templates_inputs* in) {
  std::map<std::string, std::string> call_names;  // tool_call id → function name
  in->messages.reserve(messages.size());
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& msg = messages[i];
    common_chat_msg cm;
    cm.role = msg.role;
    cm.content = msg.content;
    cm.reasoning_content = msg.reasoning;
    if (!msg.tool_calls.empty()) {
      const json calls = json::parse(msg.tool_calls, nullptr, false);
      if (!calls.is_array()) {
        const std::string f = "messages[" + std::to_string(i) + "].tool_calls";
        return Status::InvalidArgument("'" + f + "' is not a JSON array", f);
      }
      for (const auto& c : calls) {
        const json fn = c.value("function", json::object());
        common_chat_tool_call tc;
        tc.id = c.value("id", "");
        tc.name = fn.value("name", "");
        const auto args = fn.find("arguments");
        tc.arguments = args == fn.end()    ? "{}"
                       : args->is_string() ? args->get<std::string>()
                                           : args->dump();
        // A call cut by max_tokens comes back with its arguments so far;
        // templates that take an object need them whole. Text that does not
        // start as JSON goes to the template as it is (some take a string).
        if (auto closed = util::CloseJsonPrefix(tc.arguments)) tc.arguments = std::move(*closed);
        call_names[tc.id] = tc.name;
        cm.tool_calls.push_back(std::move(tc));
      }
    }
    if (!msg.tool_call_id.empty()) {
      cm.tool_call_id = msg.tool_call_id;
      if (auto it = call_names.find(msg.tool_call_id); it != call_names.end()) {
        cm.tool_name = it->second;
      }
    }
    in->messages.push_back(std::move(cm));
  }
  if (tools != nullptr) {
    for (const auto& f : tools->functions) {
      in->tools.push_back({f.name, f.description, Parameters(f)});
    }
    in->tool_choice =
        tools->required ? COMMON_CHAT_TOOL_CHOICE_REQUIRED : COMMON_CHAT_TOOL_CHOICE_AUTO;
    in->parallel_tool_calls = tools->parallel;
  }
  in->reasoning_format = options.parse_reasoning.value_or(true) ? COMMON_REASONING_FORMAT_DEEPSEEK
                                                                : COMMON_REASONING_FORMAT_NONE;
  in->enable_thinking = options.enable_thinking;
  for (const auto& [name, value] : options.template_kwargs) in->chat_template_kwargs[name] = value;
  using Ending = ChatOptions::Ending;
  in->add_generation_prompt = options.ending == Ending::kNewTurn;
  in->continue_final_message =
      options.ending == Ending::kContinueContent     ? COMMON_CHAT_CONTINUATION_CONTENT
      : options.ending == Ending::kContinueReasoning ? COMMON_CHAT_CONTINUATION_REASONING
                                                     : COMMON_CHAT_CONTINUATION_NONE;
  return Status::Ok();
}

StatusOr<std::vector<ReadySchema>> ReadyToolSchemas(const ChatTools& tools) {
  std::vector<ReadySchema> out;
  size_t numbers = 0;
  for (size_t i = 0; i < tools.functions.size(); ++i) {
    auto ready = ReadyJsonSchema(Parameters(tools.functions[i]),
                                 "tools[" + std::to_string(i) + "].function.parameters", numbers);
    if (!ready.ok()) return ready.status();
    numbers += ready->number_rules.size();
    out.push_back(std::move(ready).value());
  }
  return out;
}

std::string ToolGrammar(const common_chat_templates* templates, common_chat_templates_inputs in,
                        const std::vector<ReadySchema>& ready) {
  for (size_t i = 0; i < in.tools.size() && i < ready.size(); ++i) {
    in.tools[i].parameters = ready[i].schema;
  }
  std::string grammar = common_chat_templates_apply(templates, in).grammar;
  for (const auto& r : ready) SpliceNumberRules(r, &grammar);
  return grammar;
}

std::string CallOpening(const common_chat_params& auto_params) {
  for (const auto& t : auto_params.grammar_triggers) {
    if (t.type == COMMON_GRAMMAR_TRIGGER_TYPE_WORD && !t.value.empty()) return t.value;
  }
  return "";
}

ChatPrompt ToChatPrompt(const common_chat_params& params, const ChatTools* tools,
                        const ChatOptions& options, const std::string& opening,
                        const llama_vocab* vocab) {
  ChatPrompt out;
  out.text = params.prompt;
  out.stops = params.additional_stops;
  for (const auto& word : params.preserved_tokens) {
    auto ids = common_tokenize(vocab, word, /*add_special=*/false, /*parse_special=*/true);
    if (ids.size() == 1) out.special_tokens.push_back(ids[0]);
  }
  if (params.supports_thinking && !params.thinking_end_tags.empty()) {
    ThinkingBlock& t = out.thinking;
    t.start = params.thinking_start_tag;
    t.end = params.thinking_end_tags.front();
    // The prompt ends inside the block: the answer is thinking until the
    // closing tag (also when it continues a message's thinking).
    const std::string tail = string_strip(params.generation_prompt);  // common.h
    t.open = options.ending == ChatOptions::Ending::kContinueReasoning ||
             (!t.start.empty() && tail.size() >= t.start.size() &&
              tail.compare(tail.size() - t.start.size(), t.start.size(), t.start) == 0);
  }
  // Continuing a message's content: its thinking block is closed in the
  // prompt, and what follows is content only (a "<think>" in it is text).
  if (options.ending == ChatOptions::Ending::kContinueContent) out.thinking = ThinkingBlock();
  const bool prefilled = options.ending == ChatOptions::Ending::kContinueContent ||
                         options.ending == ChatOptions::Ending::kContinueReasoning;
  if (tools == nullptr) {
    if (options.parse_reasoning.value_or(true) && !out.thinking.end.empty()) {
      out.parser = std::make_shared<ChatAnswerParser>(params, std::string(), /*parallel=*/true,
                                                      /*reasoning=*/true, prefilled);
    }
    return out;
  }
  out.grammar = params.grammar;
  out.grammar_lazy = params.grammar_lazy;
  out.grammar_prefix = params.generation_prompt;
  if (!opening.empty() && !params.grammar_lazy && !params.grammar.empty()) {
    out.text += opening;
    out.grammar_prefix += opening;
  }
  for (const auto& t : params.grammar_triggers) {
    GrammarTrigger g{static_cast<GrammarTrigger::Type>(t.type), t.value, t.token};
    if (g.type == GrammarTrigger::Type::kWord) {
      // As llama-server: a word that is one token triggers on that token.
      auto ids = common_tokenize(vocab, t.value, false, true);
      if (ids.size() == 1) {
        g.type = GrammarTrigger::Type::kToken;
        g.token = ids[0];
      }
    }
    out.grammar_triggers.push_back(std::move(g));
  }
  const bool forced = !opening.empty() && !params.grammar_lazy && !params.grammar.empty();
  out.parser =
      std::make_shared<ChatAnswerParser>(params, forced ? opening : std::string(), tools->parallel,
                                         options.parse_reasoning.value_or(true), prefilled);
  return out;
}

}  // namespace outpost::engine

#include "outpost/api/prompt_end.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "outpost/api/json_fields.h"

namespace outpost::api {

using nlohmann::json;

Status ParsePromptEnd(const json& j, bool for_tokenize, ParsedRequest* r) {
  using Ending = engine::ChatOptions::Ending;
  std::optional<bool> header;
  if (auto it = j.find("add_generation_prompt"); it != j.end() && !it->is_null()) {
    if (!it->is_boolean()) return WrongType("add_generation_prompt", "a boolean", *it);
    header = it->get<bool>();
  }
  auto it = j.find("continue_final_message");
  const bool cont = it != j.end() && !it->is_null() && !(it->is_boolean() && !it->get<bool>());
  if (!cont) {
    if (header.value_or(true)) return Status::Ok();
    if (for_tokenize) {
      r->chat_options.ending = Ending::kNoHeader;
      return Status::Ok();
    }
    return Status::InvalidArgument(
        "'add_generation_prompt' false without 'continue_final_message' would start the answer "
        "without the template's assistant header; to continue the last (assistant) message set "
        "'continue_final_message': true (to count a history's tokens: POST /tokenize)",
        "add_generation_prompt");
  }
  const bool is_true = it->is_boolean();
  if (!is_true && !(it->is_string() && (*it == "content" || *it == "reasoning_content"))) {
    return Status::InvalidArgument(
        "'continue_final_message' must be true, false, 'content' or 'reasoning_content', got " +
            it->dump(),
        "continue_final_message");
  }
  if (header.value_or(false)) {
    return Status::InvalidArgument(
        "'add_generation_prompt' true and 'continue_final_message' exclude each other: the answer "
        "either opens a new assistant message or continues the last one",
        "add_generation_prompt");
  }
  const size_t last = r->messages.size() - 1;
  const engine::ChatMessage& m = r->messages[last];
  const std::string f = "messages[" + std::to_string(last) + "]";
  if (m.role != "assistant") {
    return Status::InvalidArgument(
        "'continue_final_message' continues the last message, which "
        "must be the assistant's; '" +
            f + ".role' is '" + m.role + "'",
        f + ".role");
  }
  if (!m.tool_calls.empty()) {
    return Status::InvalidArgument(
        "'continue_final_message' cannot continue an assistant message that holds tool calls",
        f + ".tool_calls");
  }
  const char* against =
      r->tools.active()                                                   ? "tools"
      : r->response_format.type == engine::ResponseFormat::Type::kGrammar ? "grammar"
      : r->response_format.type != engine::ResponseFormat::Type::kText    ? "response_format"
                                                                          : nullptr;
  if (against != nullptr) {
    return Status::InvalidArgument(
        std::string("'continue_final_message' cannot be combined with '") + against +
            (r->tools.active()
                 ? "': the calls' format (its grammar and parser) starts where an assistant "
                   "message starts, not in the middle of one"
                 : "': the constraint would apply from the continuation on, not from the start "
                   "of the message it continues"),
        "continue_final_message");
  }
  const bool thinking =
      is_true ? !m.reasoning.empty() && m.content.empty() : *it == "reasoning_content";
  if (thinking && !m.content.empty()) {
    return Status::InvalidArgument(
        "continuing the thinking ('reasoning_content') of a message that has content after it: "
        "send its content empty, or continue the 'content'",
        f + ".content");
  }
  r->chat_options.ending = thinking ? Ending::kContinueReasoning : Ending::kContinueContent;
  return Status::Ok();
}

}  // namespace outpost::api

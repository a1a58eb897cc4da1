#include "outpost/api/parsed_answer.h"

#include <spdlog/spdlog.h>

#include <utility>

namespace outpost::api {
namespace {

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

std::string CallId(const engine::ToolCall& call, util::Random& random) {
  return call.id.empty() ? NewId("call_", random) : call.id;
}

// The answer once it has ended. `cut` (max_tokens or the context): partial,
// whatever a format's parser makes of it (Qwen's reads `{"ci` as a whole
// call). Otherwise whole when it parses so (*whole), else what it holds so
// far (a stop string cut it) — never the format's own markup.
StatusOr<engine::ParsedAnswer> ParseEnded(const engine::AnswerParser& parser,
                                          const std::string& text, bool cut, bool* whole) {
  auto a = parser.Parse(text, /*partial=*/cut);
  *whole = a.ok() && !cut;
  if (!a.ok() && !cut) a = parser.Parse(text, /*partial=*/true);
  return a;
}

}  // namespace

void ApplyParsedAnswer(Choice* c, const engine::AnswerParser& parser, util::Random& random) {
  bool whole = false;
  auto a = ParseEnded(parser, c->text, c->finish == scheduler::FinishReason::kLength, &whole);
  if (!a.ok()) return;  // not the format at all: the raw text
  c->reasoning = std::move(a->reasoning);
  c->text = std::move(a->content);
  for (auto& call : a->tool_calls) {
    c->tool_calls.push_back(ToolCall{CallId(call, random), call.name, call.arguments});
  }
  c->tool_calls_finish = whole && !c->tool_calls.empty();
}

Choice AnswerStream::Feed(const std::string& piece) {
  text_ += piece;
  auto now = parser_->Parse(text_, /*partial=*/true);
  if (!now.ok()) return Choice{};
  return Delta(*now);
}

Choice AnswerStream::Finish(bool cut) {
  auto now = ParseEnded(*parser_, text_, cut, &whole_);
  if (now.ok()) return Delta(*now);
  Choice c;
  if (sent_.reasoning.empty() && sent_.content.empty() && sent_.tool_calls.empty()) c.text = text_;
  return c;
}

Choice AnswerStream::Delta(const engine::ParsedAnswer& now) {
  Choice d;
  // Thinking, content and arguments only grow; anything else (a parser
  // revising what it reported) cannot be taken back from the client, so it
  // is not sent.
  if (now.reasoning.size() > sent_.reasoning.size() && StartsWith(now.reasoning, sent_.reasoning)) {
    d.reasoning = now.reasoning.substr(sent_.reasoning.size());
    sent_.reasoning = now.reasoning;
  }
  if (now.content.size() > sent_.content.size() && StartsWith(now.content, sent_.content)) {
    d.text = now.content.substr(sent_.content.size());
    sent_.content = now.content;
  }
  for (size_t i = 0; i < now.tool_calls.size(); ++i) {
    const engine::ToolCall& call = now.tool_calls[i];
    if (i >= sent_.tool_calls.size()) {
      if (call.name.empty()) break;  // not known yet
      engine::ToolCall first{CallId(call, *random_), call.name, call.arguments};
      d.tool_calls.push_back(ToolCall{first.id, first.name, first.arguments, static_cast<int>(i)});
      sent_.tool_calls.push_back(std::move(first));
      continue;
    }
    engine::ToolCall& had = sent_.tool_calls[i];
    if (call.arguments.size() > had.arguments.size() && StartsWith(call.arguments, had.arguments)) {
      d.tool_calls.push_back(
          ToolCall{"", "", call.arguments.substr(had.arguments.size()), static_cast<int>(i)});
      had.arguments = call.arguments;
    } else if (call.arguments != had.arguments && !StartsWith(had.arguments, call.arguments)) {
      spdlog::warn("tool call {} arguments were revised after being streamed", i);
    }
  }
  return d;
}

}  // namespace outpost::api

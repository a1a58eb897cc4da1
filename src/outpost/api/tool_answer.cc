#include "outpost/api/tool_answer.h"

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

}  // namespace

void ApplyToolAnswer(Choice* c, const engine::AnswerParser& parser, util::Random& random) {
  // Cut by max_tokens or the context, the answer is partial whatever a
  // format's parser makes of it (Qwen's reads `{"ci` as a whole call).
  const bool cut = c->finish == scheduler::FinishReason::kLength;
  auto a = parser.Parse(c->text, /*partial=*/cut);
  const bool whole = a.ok() && !cut;
  // Cut short (max_tokens, a stop string): what the answer holds so far, as
  // a stream would have sent it — never the format's own markup.
  if (!a.ok() && !cut) a = parser.Parse(c->text, /*partial=*/true);
  if (!a.ok()) return;  // not the format at all: the raw text
  c->text = std::move(a->content);
  for (auto& call : a->tool_calls) {
    c->tool_calls.push_back(ToolCall{CallId(call, random), call.name, call.arguments});
  }
  c->tool_calls_finish = whole && !c->tool_calls.empty();
}

Choice ToolCallStream::Feed(const std::string& piece) {
  text_ += piece;
  auto now = parser_->Parse(text_, /*partial=*/true);
  if (!now.ok()) return Choice{};
  return Delta(*now);
}

Choice ToolCallStream::Finish(bool cut) {
  auto now = parser_->Parse(text_, /*partial=*/cut);
  whole_ = now.ok() && !cut;
  if (!now.ok() && !cut) now = parser_->Parse(text_, /*partial=*/true);  // what it holds
  if (now.ok()) return Delta(*now);
  Choice c;
  if (sent_.content.empty() && sent_.tool_calls.empty()) c.text = text_;
  return c;
}

Choice ToolCallStream::Delta(const engine::ParsedAnswer& now) {
  Choice d;
  // Content and arguments only grow; anything else (a parser revising what it
  // reported) cannot be taken back from the client, so it is not sent.
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

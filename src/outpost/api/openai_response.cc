#include "outpost/api/openai_response.h"

#include <nlohmann/json.hpp>

#include "outpost/api/json_fields.h"

namespace outpost::api {
namespace {

using nlohmann::json;

json FinishJson(const Choice& c) {
  if (c.tool_calls_finish) return "tool_calls";
  switch (c.finish) {
    case scheduler::FinishReason::kStop:
      return "stop";
    case scheduler::FinishReason::kLength:
      return "length";
    default:
      return nullptr;
  }
}

json UsageJson(const scheduler::Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}},
          {"completion_tokens_details", {{"reasoning_tokens", u.reasoning_tokens}}}};
}

json Base(const ResponseMeta& m, const char* object) {
  return {{"id", m.id},
          {"object", object},
          {"created", m.created},
          {"model", m.model},
          {"system_fingerprint", m.system_fingerprint},
          {"service_tier", m.service_tier}};
}

// Chat: {"content": [{token, logprob, bytes, top_logprobs: [...]}], "refusal": null}.
json ChatLogprobs(const Choice& c) {
  if (!c.has_logprobs) return nullptr;
  json content = json::array();
  for (const auto& t : c.logprobs) {
    json top = json::array();
    for (const auto& [piece, lp] : t.top)
      top.push_back({{"token", piece}, {"logprob", lp}, {"bytes", ByteArray(piece)}});
    content.push_back({{"token", t.piece},
                       {"logprob", t.logprob},
                       {"bytes", ByteArray(t.piece)},
                       {"top_logprobs", top}});
  }
  return {{"content", content}, {"refusal", nullptr}};
}

// Completions (legacy): {tokens, token_logprobs, top_logprobs: [{token: lp}], text_offset}.
json CompletionLogprobs(const Choice& c) {
  if (!c.has_logprobs) return nullptr;
  json tokens = json::array(), lps = json::array(), tops = json::array(), offs = json::array();
  int64_t off = c.text_offset;
  for (const auto& t : c.logprobs) {
    tokens.push_back(t.piece);
    lps.push_back(t.logprob);
    json top = json::object();
    for (const auto& [piece, lp] : t.top) top[piece] = lp;
    tops.push_back(top);
    offs.push_back(off);
    off += static_cast<int64_t>(t.piece.size());
  }
  return {
      {"tokens", tokens}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offs}};
}

json ToolCallsJson(const std::vector<ToolCall>& calls, bool stream) {
  json a = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    const ToolCall& c = calls[i];
    json call = json::object();
    if (stream) call["index"] = c.index >= 0 ? static_cast<size_t>(c.index) : i;
    if (!stream || !c.id.empty()) {
      call["id"] = c.id;
      call["type"] = "function";
      call["function"] = {{"name", c.name}, {"arguments", c.arguments}};
    } else {
      call["function"] = {{"arguments", c.arguments}};  // a later delta of the same call
    }
    a.push_back(call);
  }
  return a;
}

}  // namespace

std::string ChatCompletionBody(const ResponseMeta& m, const std::vector<Choice>& choices,
                               const scheduler::Usage& usage) {
  json j = Base(m, "chat.completion");
  j["choices"] = json::array();
  for (const Choice& c : choices) {
    json message = {{"role", "assistant"}, {"refusal", nullptr}};
    // Only a thinking model's answer has it: under llama-server's name and
    // under `reasoning`, vLLM's since 0.11 (which dropped the other) and
    // OpenRouter's, so clients written for either find it.
    if (!c.reasoning.empty()) {
      message["reasoning_content"] = c.reasoning;
      message["reasoning"] = c.reasoning;
    }
    if (c.tool_calls.empty()) {
      message["content"] = c.text;
    } else {
      message["content"] = c.text.empty() ? json(nullptr) : json(c.text);
      message["tool_calls"] = ToolCallsJson(c.tool_calls, false);
    }
    j["choices"].push_back({{"index", c.index},
                            {"message", message},
                            {"logprobs", ChatLogprobs(c)},
                            {"finish_reason", FinishJson(c)}});
  }
  j["usage"] = UsageJson(usage);
  return DumpLossy(j);
}

std::string ChatChunk(const ResponseMeta& m, const Choice& c, bool role_start, bool content_delta) {
  json j = Base(m, "chat.completion.chunk");
  json delta = json::object();
  if (role_start) delta["role"] = "assistant";
  if (!c.reasoning.empty()) {  // both names, as the message (above)
    delta["reasoning_content"] = c.reasoning;
    delta["reasoning"] = c.reasoning;
  }
  if (content_delta) delta["content"] = c.text;
  if (!c.tool_calls.empty()) delta["tool_calls"] = ToolCallsJson(c.tool_calls, true);
  j["choices"] = json::array({{{"index", c.index},
                               {"delta", delta},
                               {"logprobs", ChatLogprobs(c)},
                               {"finish_reason", FinishJson(c)}}});
  return DumpLossy(j);
}

std::string CompletionBody(const ResponseMeta& m, const std::vector<Choice>& choices,
                           const scheduler::Usage& usage) {
  json j = Base(m, "text_completion");
  j["choices"] = json::array();
  for (const Choice& c : choices) {
    j["choices"].push_back({{"index", c.index},
                            {"text", c.text},
                            {"logprobs", CompletionLogprobs(c)},
                            {"finish_reason", FinishJson(c)}});
  }
  j["usage"] = UsageJson(usage);
  return DumpLossy(j);
}

std::string CompletionChunk(const ResponseMeta& m, const Choice& c) {
  json j = Base(m, "text_completion");
  j["choices"] = json::array({{{"index", c.index},
                               {"text", c.text},
                               {"logprobs", CompletionLogprobs(c)},
                               {"finish_reason", FinishJson(c)}}});
  return DumpLossy(j);
}

std::string UsageChunk(const ResponseMeta& m, bool chat, const scheduler::Usage& usage) {
  json j = Base(m, chat ? "chat.completion.chunk" : "text_completion");
  j["choices"] = json::array();
  j["usage"] = UsageJson(usage);
  return DumpLossy(j);
}

std::string NewId(const std::string& prefix, util::Random& random) {
  return util::RandomId(prefix, random);
}

}  // namespace outpost::api

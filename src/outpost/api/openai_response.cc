#include "outpost/api/openai_response.h"

#include <nlohmann/json.hpp>

namespace outpost::api {
namespace {

using nlohmann::json;

std::string Dump(const json& j) {
  // Invalid UTF-8 from a model (rare) is replaced rather than failing the request.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json Finish(scheduler::FinishReason f) {
  switch (f) {
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
          {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

json Base(const ResponseMeta& m, const char* object) {
  return {{"id", m.id},
          {"object", object},
          {"created", m.created},
          {"model", m.model},
          {"system_fingerprint", m.system_fingerprint}};
}

}  // namespace

std::string ChatCompletionBody(const ResponseMeta& m, const std::string& text,
                               scheduler::FinishReason finish, const scheduler::Usage& usage) {
  json j = Base(m, "chat.completion");
  j["choices"] = json::array({{{"index", 0},
                               {"message", {{"role", "assistant"}, {"content", text}}},
                               {"logprobs", nullptr},
                               {"finish_reason", Finish(finish)}}});
  j["usage"] = UsageJson(usage);
  return Dump(j);
}

std::string ChatChunk(const ResponseMeta& m, const std::string* content, bool role_start,
                      scheduler::FinishReason finish) {
  json j = Base(m, "chat.completion.chunk");
  json delta = json::object();
  if (role_start) delta["role"] = "assistant";
  if (content) delta["content"] = *content;
  j["choices"] = json::array(
      {{{"index", 0}, {"delta", delta}, {"logprobs", nullptr}, {"finish_reason", Finish(finish)}}});
  return Dump(j);
}

std::string CompletionBody(const ResponseMeta& m, const std::string& text,
                           scheduler::FinishReason finish, const scheduler::Usage& usage) {
  json j = Base(m, "text_completion");
  j["choices"] = json::array(
      {{{"index", 0}, {"text", text}, {"logprobs", nullptr}, {"finish_reason", Finish(finish)}}});
  j["usage"] = UsageJson(usage);
  return Dump(j);
}

std::string CompletionChunk(const ResponseMeta& m, const std::string& text,
                            scheduler::FinishReason finish) {
  json j = Base(m, "text_completion");
  j["choices"] = json::array(
      {{{"index", 0}, {"text", text}, {"logprobs", nullptr}, {"finish_reason", Finish(finish)}}});
  return Dump(j);
}

std::string UsageChunk(const ResponseMeta& m, bool chat, const scheduler::Usage& usage) {
  json j = Base(m, chat ? "chat.completion.chunk" : "text_completion");
  j["choices"] = json::array();
  j["usage"] = UsageJson(usage);
  return Dump(j);
}

std::string NewId(const std::string& prefix, util::Random& random) {
  static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  constexpr uint64_t kLetters = sizeof(kAlphabet) - 1;  // 62
  std::string id = prefix;
  // 24 characters from three draws of 8 (62^8 < 2^48: the modulo bias is nil).
  for (int draw = 0; draw < 3; ++draw) {
    uint64_t bits = random.Next();
    for (int i = 0; i < 8; ++i) {
      id += kAlphabet[bits % kLetters];
      bits /= kLetters;
    }
  }
  return id;
}

}  // namespace outpost::api

#include "outpost/api/content_capture_sink.h"

#include <nlohmann/json.hpp>

#include <sstream>

#include "outpost/util/status.h"

namespace outpost::api {
namespace {

using nlohmann::json;

// Relayed bodies are read back up to this much; the rest is not captured.
constexpr size_t kMaxRelayBytes = 1024 * 1024;

// The longest prefix of `s` within *budget bytes, cut on a UTF-8 character
// boundary; the budget shrinks by what was taken.
std::string Take(const std::string& s, size_t* budget, bool* truncated) {
  if (s.size() <= *budget) {
    *budget -= s.size();
    return s;
  }
  *truncated = true;
  size_t n = *budget;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  *budget = 0;
  return s.substr(0, n);
}

json TextPart(const std::string& text, size_t* budget, bool* truncated) {
  return {{"type", "text"}, {"content", Take(text, budget, truncated)}};
}

}  // namespace

CapturedInput CaptureInput(const router::CompletionRequest& request, size_t budget) {
  CapturedInput out;
  json input = json::array();
  json system = json::array();
  if (request.endpoint == router::Endpoint::kCompletion) {
    input.push_back({{"role", "user"},
                     {"parts", json::array({TextPart(request.prompt, &budget, &out.truncated)})}});
  }
  for (const auto& m : request.messages) {
    if (m.role == "system" || m.role == "developer") {
      system.push_back(TextPart(m.content, &budget, &out.truncated));
      continue;
    }
    json parts = json::array();
    if (m.role == "tool") {
      parts.push_back({{"type", "tool_call_response"},
                       {"id", m.tool_call_id},
                       {"response", Take(m.content, &budget, &out.truncated)}});
    } else if (!m.content.empty()) {
      parts.push_back(TextPart(m.content, &budget, &out.truncated));
    }
    if (!m.tool_calls.empty()) {
      const json calls = json::parse(m.tool_calls, nullptr, false);
      if (calls.is_array()) {
        for (const auto& c : calls) {
          if (!c.is_object() || !c.contains("function") || !c["function"].is_object()) continue;
          const json& f = c["function"];
          parts.push_back(
              {{"type", "tool_call"},
               {"id", c.value("id", std::string())},
               {"name", f.value("name", std::string())},
               {"arguments", Take(f.value("arguments", std::string()), &budget, &out.truncated)}});
        }
      }
    }
    input.push_back({{"role", m.role}, {"parts", std::move(parts)}});
  }
  out.input_json = input.dump();
  if (!system.empty()) out.system_json = system.dump();
  return out;
}

std::map<int, std::string> RelayedText(const std::string& body) {
  std::map<int, std::string> text;
  auto add = [&](const json& chunk) {
    if (!chunk.is_object() || !chunk.contains("choices") || !chunk["choices"].is_array()) return;
    for (const auto& c : chunk["choices"]) {
      if (!c.is_object()) continue;
      const int i = c.value("index", 0);
      for (const char* where : {"message", "delta"}) {
        if (c.contains(where) && c[where].is_object() && c[where].contains("content") &&
            c[where]["content"].is_string()) {
          text[i] += c[where]["content"].get<std::string>();
        }
      }
      if (c.contains("text") && c["text"].is_string()) text[i] += c["text"].get<std::string>();
    }
  };
  const json whole = json::parse(body, nullptr, false);
  if (!whole.is_discarded()) {
    add(whole);
    return text;
  }
  std::istringstream lines(body);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind("data:", 0) != 0) continue;
    std::string data = line.substr(5);
    if (!data.empty() && data[0] == ' ') data.erase(0, 1);
    if (data == "[DONE]") continue;
    add(json::parse(data, nullptr, false));
  }
  return text;
}

ContentCaptureSink::ContentCaptureSink(std::shared_ptr<router::ResponseSink> inner, Emit emit,
                                       ContentCaptureInfo info, CapturedInput input, int64_t now_ms)
    : ForwardingSink(std::move(inner)),
      emit_(std::move(emit)),
      info_(std::move(info)),
      input_(std::move(input)),
      time_ms_(now_ms) {}

ContentCaptureSink::~ContentCaptureSink() {
  if (!sent_) Send({}, "cancelled", 0, 0);
}

void ContentCaptureSink::Send(const std::map<int, std::string>& finish, const std::string& error,
                              int prompt_tokens, int completion_tokens) {
  if (sent_.exchange(true)) return;
  telemetry::UplinkEvent e;
  e.name = "gen_ai.client.inference.operation.details";
  e.severity = "DEBUG";
  e.time_ms = time_ms_;
  std::lock_guard<std::mutex> lock(mu_);
  std::map<int, std::string> text = text_;
  bool truncated = input_.truncated || text_cut_;
  if (!relay_body_.empty()) {
    text = RelayedText(relay_body_);
    if (relay_body_.size() >= kMaxRelayBytes) truncated = true;
  }
  size_t budget = kMaxContentBytes;
  json output = json::array();
  json reasons = json::array();
  for (const auto& [choice, t] : text) {
    const auto f = finish.find(choice);
    const std::string reason = f == finish.end() ? std::string() : f->second;
    json m = {{"role", "assistant"}, {"parts", json::array({TextPart(t, &budget, &truncated)})}};
    if (!reason.empty()) {
      m["finish_reason"] = reason;
      reasons.push_back(reason);
    }
    output.push_back(std::move(m));
  }
  auto& a = e.attributes;
  a["gen_ai.operation.name"] = info_.operation;
  a["gen_ai.provider.name"] = "outpost";
  a["gen_ai.request.model"] = info_.model;
  if (!served_model_.empty()) a["gen_ai.response.model"] = served_model_;
  a["gen_ai.response.id"] = info_.request_id;
  if (!reasons.empty()) a["gen_ai.response.finish_reasons"] = reasons.dump();
  if (prompt_tokens > 0) a["gen_ai.usage.input_tokens"] = std::to_string(prompt_tokens);
  if (completion_tokens > 0) a["gen_ai.usage.output_tokens"] = std::to_string(completion_tokens);
  a["gen_ai.input.messages"] = input_.input_json;
  if (!input_.system_json.empty()) a["gen_ai.system_instructions"] = input_.system_json;
  a["gen_ai.output.messages"] = output.dump();
  if (!error.empty()) a["error.type"] = error;
  a["outpost.tenant"] = info_.tenant;
  a["outpost.route"] = route_;
  if (truncated) a["outpost.content_truncated"] = "true";
  emit_(std::move(e));
}

void ContentCaptureSink::OnRoute(const router::RouteReport& route) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    route_ = route.route;
  }
  inner_->OnRoute(route);
}

void ContentCaptureSink::OnLocalStart(const router::LocalAnswerMeta& meta) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    served_model_ = meta.model;
  }
  inner_->OnLocalStart(meta);
}

void ContentCaptureSink::OnText(int choice, std::string text) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (text_bytes_ < kMaxContentBytes) {
      text_[choice] += text;
      text_bytes_ += text.size();
    } else {
      text_cut_ = true;
    }
  }
  inner_->OnText(choice, std::move(text));
}

void ContentCaptureSink::OnDone(scheduler::GenerationResult result) {
  std::map<int, std::string> finish;
  for (size_t i = 0; i < result.choices.size(); ++i) {
    finish[static_cast<int>(i)] = scheduler::FinishReasonName(result.choices[i]);
  }
  if (finish.empty()) finish[0] = scheduler::FinishReasonName(result.finish);
  Send(finish, result.error.ok() ? std::string() : StatusCodeName(result.error.code()),
       result.usage.prompt_tokens, result.usage.completion_tokens);
  inner_->OnDone(std::move(result));
}

void ContentCaptureSink::OnRelayBody(std::string chunk) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (relay_body_.size() < kMaxRelayBytes) {
      relay_body_.append(chunk, 0, kMaxRelayBytes - relay_body_.size());
    }
  }
  inner_->OnRelayBody(std::move(chunk));
}

void ContentCaptureSink::OnRelayEnd(Status error) {
  Send({}, error.ok() ? std::string() : StatusCodeName(error.code()), 0, 0);
  inner_->OnRelayEnd(std::move(error));
}

void ContentCaptureSink::OnError(Status error) {
  Send({}, StatusCodeName(error.code()), 0, 0);
  inner_->OnError(std::move(error));
}

}  // namespace outpost::api

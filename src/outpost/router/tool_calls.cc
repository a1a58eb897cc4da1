#include "outpost/router/tool_calls.h"

#include <nlohmann/json.hpp>

namespace outpost::router {
namespace {

using nlohmann::json;

json ParametersSchema(const ToolFunction& f) {
  if (f.parameters.empty()) return json{{"type", "object"}};
  json p = json::parse(f.parameters, nullptr, false);
  return p.is_discarded() ? json{{"type", "object"}} : p;
}

std::string Describe(const ToolSpec& tools) {
  std::string s =
      "You can call functions. Answer only with JSON. To call functions, answer "
      "{\"tool_calls\": [{\"name\": \"<function name>\", \"arguments\": {<arguments>}}]}";
  if (tools.choice.mode == ToolChoice::Mode::kAuto) {
    s += "; to answer the user directly instead, answer {\"response\": \"<your answer>\"}";
  }
  s += ".\nFunctions:\n";
  for (const auto& f : tools.functions) {
    if (tools.choice.mode == ToolChoice::Mode::kFunction && f.name != tools.choice.function)
      continue;
    s += "- " + f.name;
    if (!f.description.empty()) s += ": " + f.description;
    s += "\n  arguments: " + ParametersSchema(f).dump() + "\n";
  }
  return s;
}

}  // namespace

std::vector<engine::ChatMessage> ToolMessages(const std::vector<engine::ChatMessage>& messages,
                                              const ToolSpec& tools) {
  std::vector<engine::ChatMessage> out;
  const std::string about = Describe(tools);
  size_t first = 0;
  if (!messages.empty() && messages[0].role == "system") {
    out.push_back({"system", messages[0].content + "\n\n" + about});
    first = 1;
  } else {
    out.push_back({"system", about});
  }
  for (size_t i = first; i < messages.size(); ++i) {
    const engine::ChatMessage& m = messages[i];
    if (m.role == "assistant" && !m.tool_calls.empty()) {
      json calls = json::array();
      const json given = json::parse(m.tool_calls, nullptr, false);
      if (given.is_array()) {
        for (const auto& c : given) {
          const json fn = c.value("function", json::object());
          json args = json::parse(fn.value("arguments", "{}"), nullptr, false);
          if (args.is_discarded()) args = json::object();
          calls.push_back({{"name", fn.value("name", "")}, {"arguments", args}});
        }
      }
      out.push_back({"assistant", json{{"tool_calls", calls}}.dump()});
    } else if (m.role == "tool") {
      out.push_back({"user", "Result of function call " + m.tool_call_id + ": " + m.content});
    } else {
      out.push_back({m.role, m.content});
    }
  }
  return out;
}

std::string ToolAnswerSchema(const ToolSpec& tools) {
  json one_of_calls = json::array();
  for (const auto& f : tools.functions) {
    if (tools.choice.mode == ToolChoice::Mode::kFunction && f.name != tools.choice.function)
      continue;
    one_of_calls.push_back(
        {{"type", "object"},
         {"properties", {{"name", {{"const", f.name}}}, {"arguments", ParametersSchema(f)}}},
         {"required", {"name", "arguments"}},
         {"additionalProperties", false}});
  }
  json items = one_of_calls.size() == 1 ? one_of_calls[0] : json{{"anyOf", one_of_calls}};
  json calls = {{"type", "array"}, {"items", items}, {"minItems", 1}};
  if (!tools.parallel) calls["maxItems"] = 1;
  json call_answer = {{"type", "object"},
                      {"properties", {{"tool_calls", calls}}},
                      {"required", {"tool_calls"}},
                      {"additionalProperties", false}};
  if (tools.choice.mode != ToolChoice::Mode::kAuto) return call_answer.dump();
  json text_answer = {{"type", "object"},
                      {"properties", {{"response", {{"type", "string"}}}}},
                      {"required", {"response"}},
                      {"additionalProperties", false}};
  return json{{"anyOf", {call_answer, text_answer}}}.dump();
}

engine::ChatTools NativeTools(const ToolSpec& tools) {
  engine::ChatTools out;
  out.parallel = tools.parallel;
  out.required = tools.choice.mode != ToolChoice::Mode::kAuto;
  for (const auto& f : tools.functions) {
    if (tools.choice.mode == ToolChoice::Mode::kFunction && f.name != tools.choice.function)
      continue;
    out.functions.push_back(f);
  }
  return out;
}

StatusOr<engine::ParsedAnswer> ParseToolAnswer(const std::string& text) {
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::InvalidArgument("the model's answer is not a complete tool-call JSON");
  }
  engine::ParsedAnswer a;
  if (auto r = j.find("response"); r != j.end() && r->is_string()) {
    a.content = r->get<std::string>();
    return a;
  }
  auto calls = j.find("tool_calls");
  if (calls == j.end() || !calls->is_array()) {
    return Status::InvalidArgument("the model's answer has neither tool_calls nor response");
  }
  for (const auto& c : *calls) {
    if (!c.is_object() || !c.contains("name")) continue;
    a.tool_calls.push_back({"", c.value("name", ""), c.value("arguments", json::object()).dump()});
  }
  return a;
}

namespace {

class GenericParser : public engine::AnswerParser {
 public:
  StatusOr<engine::ParsedAnswer> Parse(const std::string& text, bool partial) const override {
    if (partial) return engine::ParsedAnswer{};
    return ParseToolAnswer(text);
  }
};

}  // namespace

std::shared_ptr<const engine::AnswerParser> GenericToolParser() {
  static const auto* parser =
      new std::shared_ptr<const engine::AnswerParser>(std::make_shared<GenericParser>());
  return *parser;
}

}  // namespace outpost::router

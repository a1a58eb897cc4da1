#include "outpost/router/tool_calls.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>

#include "outpost/util/json_text.h"

namespace outpost::router {
namespace {

// Ordered, so that the schema lists "name" before "arguments" (the grammar
// follows that order and a stream then names a call before its arguments)
// and a function's parameters keep the order the client gave.
using json = nlohmann::ordered_json;

json ParametersSchema(const ToolFunction& f) {
  if (f.parameters.empty()) return json{{"type", "object"}};
  json p = json::parse(f.parameters, nullptr, false);
  return p.is_discarded() ? json{{"type", "object"}} : p;
}

// The schema a direct answer's "response" follows: text, or the client's.
json ResponseSchema(const std::string& response_schema) {
  if (response_schema.empty()) return json{{"type", "string"}};
  json s = json::parse(response_schema, nullptr, false);
  return s.is_discarded() ? json{{"type", "object"}} : s;
}

std::string Describe(const ToolSpec& tools, const std::string& response_schema) {
  std::string s =
      "You can call functions. Answer only with JSON. To call functions, answer "
      "{\"tool_calls\": [{\"name\": \"<function name>\", \"arguments\": {<arguments>}}]}";
  if (tools.choice.mode == ToolChoice::Mode::kAuto && response_schema.empty()) {
    s += "; to answer the user directly instead, answer {\"response\": \"<your answer>\"}";
  } else if (tools.choice.mode == ToolChoice::Mode::kAuto) {
    s += "; to answer the user directly instead, answer {\"response\": <your answer as JSON "
         "following this schema: " +
         ResponseSchema(response_schema).dump() + ">}";
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
                                              const ToolSpec& tools,
                                              const std::string& response_schema) {
  std::vector<engine::ChatMessage> out;
  const std::string about = Describe(tools, response_schema);
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
          // A call cut by max_tokens comes back with its arguments so far:
          // closed into JSON (util/json_text.h), or {} when they never were.
          const auto given_args = fn.find("arguments");
          json args = json::object();
          if (given_args != fn.end() && given_args->is_object()) {
            args = *given_args;
          } else if (given_args != fn.end() && given_args->is_string()) {
            const auto closed = util::CloseJsonPrefix(given_args->get<std::string>());
            if (closed) args = json::parse(*closed);  // JSON by its contract
          }
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

std::string ToolAnswerSchema(const ToolSpec& tools, const std::string& response_schema) {
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
                      {"properties", {{"response", ResponseSchema(response_schema)}}},
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

namespace {

// Reads the generic format left to right, as far as the text goes: a partial
// answer yields what is certain (the response text so far; calls whose name
// is complete, with their arguments' raw JSON text so far). Arguments are
// kept as the model wrote them, so a stream's pieces add up to the final
// arguments exactly.
class Scanner {
 public:
  enum Result { kDone, kMore, kBad };  // kMore: the text ended first

  Scanner(const std::string& s, bool json_response) : s_(s), json_response_(json_response) {}

  Result Answer(engine::ParsedAnswer* a) {
    if (Result r = Expect('{'); r != kDone) return r;
    std::string key;
    if (Result r = String(&key); r != kDone) return r;
    if (Result r = Expect(':'); r != kDone) return r;
    if (key == "response") {
      if (Result r = json_response_ ? Value(&a->content) : String(&a->content); r != kDone) {
        return r;
      }
    } else if (key == "tool_calls") {
      if (Result r = Calls(&a->tool_calls); r != kDone) return r;
    } else {
      return kBad;
    }
    if (Result r = Expect('}'); r != kDone) return r;
    SkipSpace();
    return i_ == s_.size() ? kDone : kBad;
  }

 private:
  Result Calls(std::vector<engine::ToolCall>* calls) {
    if (Result r = Expect('['); r != kDone) return r;
    for (bool first = true;; first = false) {
      SkipSpace();
      if (i_ == s_.size()) return kMore;
      if (s_[i_] == ']') {
        ++i_;
        return kDone;
      }
      if (!first) {
        if (Result r = Expect(','); r != kDone) return r;
      }
      if (Result r = Call(calls); r != kDone) return r;
    }
  }

  // {"name": "...", "arguments": {...}}, keys in either order. The call is
  // reported once its name is complete.
  Result Call(std::vector<engine::ToolCall>* calls) {
    if (Result r = Expect('{'); r != kDone) return r;
    const size_t at = calls->size();
    engine::ToolCall call;
    bool named = false, has_args = false;
    for (bool first = true;; first = false) {
      SkipSpace();
      if (i_ == s_.size()) return kMore;
      if (s_[i_] == '}') {
        ++i_;
        return named && has_args ? kDone : kBad;
      }
      if (!first) {
        if (Result r = Expect(','); r != kDone) return r;
      }
      std::string key;
      if (Result r = String(&key); r != kDone) return r;
      if (Result r = Expect(':'); r != kDone) return r;
      Result r = kBad;
      if (key == "name") {
        r = String(&call.name);
        named = r == kDone;
      } else if (key == "arguments") {
        r = Value(&call.arguments);
        has_args = r == kDone;
      }
      if (named) {
        if (calls->size() == at) {
          calls->push_back(call);
        } else {
          calls->back() = call;
        }
      }
      if (r != kDone) return r;
    }
  }

  // A JSON string; *out gets its decoded text, as far as it goes.
  Result String(std::string* out) {
    if (Result r = Expect('"'); r != kDone) return r;
    const size_t start = i_;
    size_t safe = start;  // end of the raw text outside any escape
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '"') {
        *out = Decode(s_.substr(start, i_ - start));
        ++i_;
        return kDone;
      }
      if (c == '\\') {
        const size_t len = i_ + 1 < s_.size() && s_[i_ + 1] == 'u' ? 6 : 2;
        if (i_ + len > s_.size()) break;
        i_ += len;
      } else {
        ++i_;
      }
      safe = i_;
    }
    *out = Decode(s_.substr(start, safe - start));
    return kMore;
  }

  // The raw text of one JSON value (objects and arrays nested), as far as it goes.
  Result Value(std::string* out) {
    SkipSpace();
    const size_t start = i_;
    int depth = 0;
    bool in_string = false;
    for (; i_ < s_.size(); ++i_) {
      const char c = s_[i_];
      if (in_string) {
        if (c == '\\') {
          ++i_;
        } else if (c == '"') {
          in_string = false;
        }
        continue;
      }
      if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if ((c == '}' || c == ']') && depth == 0) {
        *out = s_.substr(start, i_ - start);  // a scalar, ended by its container
        return i_ > start ? kDone : kBad;
      } else if (c == '}' || c == ']') {
        --depth;
        if (depth == 0) {
          ++i_;
          *out = s_.substr(start, i_ - start);
          return kDone;
        }
      } else if (depth == 0 && (c == ',' || std::isspace(static_cast<unsigned char>(c)))) {
        *out = s_.substr(start, i_ - start);  // a scalar
        return i_ > start ? kDone : kBad;
      }
    }
    *out = s_.substr(start, std::min(i_, s_.size()) - start);
    return kMore;
  }

  Result Expect(char c) {
    SkipSpace();
    if (i_ == s_.size()) return kMore;
    if (s_[i_] != c) return kBad;
    ++i_;
    return kDone;
  }

  void SkipSpace() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }

  // Raw JSON string contents → text; a lone surrogate cut by the end is dropped.
  static std::string Decode(const std::string& raw) {
    for (size_t cut = raw.size();;) {
      const json j = json::parse("\"" + raw.substr(0, cut) + "\"", nullptr, false);
      if (!j.is_discarded()) return j.get<std::string>();
      const size_t esc = raw.rfind('\\', cut == 0 ? 0 : cut - 1);
      if (esc == std::string::npos || cut == 0) return "";
      cut = esc;
    }
  }

  const std::string& s_;
  const bool json_response_;
  size_t i_ = 0;
};

}  // namespace

StatusOr<engine::ParsedAnswer> ParseToolAnswer(const std::string& text, bool json_response) {
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::InvalidArgument("the model's answer is not a complete tool-call JSON");
  }
  engine::ParsedAnswer a;
  if (Scanner(text, json_response).Answer(&a) == Scanner::kDone) return a;
  return Status::InvalidArgument("the model's answer has neither tool_calls nor response");
}

StatusOr<engine::ParsedAnswer> ParsePartialToolAnswer(const std::string& text, bool json_response) {
  engine::ParsedAnswer a;
  if (Scanner(text, json_response).Answer(&a) == Scanner::kBad) {
    return Status::InvalidArgument("the model's answer is not the tool-call format");
  }
  return a;
}

namespace {

class GenericParser : public engine::AnswerParser {
 public:
  explicit GenericParser(bool json_response) : json_response_(json_response) {}
  StatusOr<engine::ParsedAnswer> Parse(const std::string& text, bool partial) const override {
    return partial ? ParsePartialToolAnswer(text, json_response_)
                   : ParseToolAnswer(text, json_response_);
  }

 private:
  const bool json_response_;
};

// The thinking first (the template's parser), then the format.
class AfterThinkingParser : public engine::AnswerParser {
 public:
  AfterThinkingParser(std::shared_ptr<const engine::AnswerParser> thinking,
                      std::shared_ptr<const engine::AnswerParser> format)
      : thinking_(std::move(thinking)), format_(std::move(format)) {}
  StatusOr<engine::ParsedAnswer> Parse(const std::string& text, bool partial) const override {
    auto split = thinking_->Parse(text, partial);
    if (!split.ok()) return split.status();
    // Still thinking: nothing of the format yet.
    if (split->content.empty() && partial) return split;
    auto a = format_->Parse(split->content, partial);
    if (!a.ok()) return a.status();
    a->reasoning = std::move(split->reasoning);
    return a;
  }

 private:
  const std::shared_ptr<const engine::AnswerParser> thinking_, format_;
};

}  // namespace

std::shared_ptr<const engine::AnswerParser> GenericToolParser(
    bool json_response, std::shared_ptr<const engine::AnswerParser> thinking) {
  if (thinking != nullptr) {
    return std::make_shared<AfterThinkingParser>(std::move(thinking),
                                                 GenericToolParser(json_response));
  }
  static const auto* text =
      new std::shared_ptr<const engine::AnswerParser>(std::make_shared<GenericParser>(false));
  static const auto* json_value =
      new std::shared_ptr<const engine::AnswerParser>(std::make_shared<GenericParser>(true));
  return json_response ? *json_value : *text;
}

}  // namespace outpost::router

#include "outpost/api/openai_request.h"

#include <nlohmann/json.hpp>

#include "outpost/api/json_fields.h"
#include "outpost/api/prompt_end.h"

#include "outpost/engine/token_id.h"
#include "outpost/util/json_text.h"
#include "outpost/util/status_macros.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <limits>

namespace outpost::api {
namespace {

using nlohmann::json;

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Optional number in [lo, hi]. Absent or null leaves *out unchanged.
template <typename Out>
Status GetNumber(const json& body, const char* key, double lo, double hi, Out* out) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return Status::Ok();
  if (!it->is_number()) return WrongType(key, "a number", *it);
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < lo || v > hi) {
    return Status::InvalidArgument("'" + std::string(key) + "' must be between " + Num(lo) +
                                       " and " + Num(hi) + ", got " + it->dump(),
                                   key);
  }
  *out = static_cast<float>(v);
  return Status::Ok();
}

Status GetInt(const json& body, const char* key, int64_t lo, int64_t hi, int64_t* out,
              bool* given) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return Status::Ok();
  if (!it->is_number_integer()) return WrongType(key, "an integer", *it);
  const int64_t v = it->get<int64_t>();
  if (v < lo || v > hi) {
    return Status::InvalidArgument("'" + std::string(key) + "' must be between " +
                                       std::to_string(lo) + " and " + std::to_string(hi) +
                                       ", got " + std::to_string(v),
                                   key);
  }
  *out = v;
  if (given) *given = true;
  return Status::Ok();
}

Status GetBool(const json& obj, const char* key, const std::string& field, bool* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Status::Ok();
  if (!it->is_boolean()) return WrongType(field, "a boolean", *it);
  *out = it->get<bool>();
  return Status::Ok();
}

// Message content: a string, or an array of {"type":"text","text":...} parts.
Status ParseContent(const json& c, const std::string& field, std::string* out) {
  if (c.is_string()) {
    *out = c.get<std::string>();
    return Status::Ok();
  }
  if (!c.is_array()) return WrongType(field, "a string or an array of content parts", c);
  for (size_t i = 0; i < c.size(); ++i) {
    const std::string pf = field + "[" + std::to_string(i) + "]";
    const json& part = c[i];
    if (!part.is_object()) return WrongType(pf, "an object", part);
    auto type = part.find("type");
    if (type == part.end() || !type->is_string()) {
      return Status::InvalidArgument("'" + pf + ".type' is required and must be a string",
                                     pf + ".type");
    }
    if (*type != "text") {
      return Status::InvalidArgument("content part type '" + type->get<std::string>() +
                                         "' is not supported by this model (only 'text')",
                                     pf + ".type");
    }
    auto text = part.find("text");
    if (text == part.end() || !text->is_string()) {
      return Status::InvalidArgument("'" + pf + ".text' is required and must be a string",
                                     pf + ".text");
    }
    if (!out->empty()) *out += "\n";
    *out += text->get<std::string>();
  }
  return Status::Ok();
}

Status ParseMessages(const json& body, ParsedRequest* r) {
  auto it = body.find("messages");
  if (it == body.end()) return Status::InvalidArgument("'messages' is required", "messages");
  if (!it->is_array()) return WrongType("messages", "an array", *it);
  if (it->empty()) return Status::InvalidArgument("'messages' must not be empty", "messages");
  for (size_t i = 0; i < it->size(); ++i) {
    const std::string f = "messages[" + std::to_string(i) + "]";
    const json& m = (*it)[i];
    if (!m.is_object()) return WrongType(f, "an object", m);
    auto role = m.find("role");
    if (role == m.end())
      return Status::InvalidArgument("'" + f + ".role' is required", f + ".role");
    if (!role->is_string()) return WrongType(f + ".role", "a string", *role);
    const std::string rs = role->get<std::string>();
    if (rs != "system" && rs != "user" && rs != "assistant" && rs != "developer" && rs != "tool") {
      return Status::InvalidArgument(
          "'" + f + ".role' must be one of system, developer, user, assistant, tool; got '" + rs +
              "'",
          f + ".role");
    }
    engine::ChatMessage msg;
    msg.role = rs == "developer" ? "system" : rs;
    auto content = m.find("content");
    if (content == m.end() || content->is_null()) {
      if (rs != "assistant") {
        return Status::InvalidArgument("'" + f + ".content' is required", f + ".content");
      }
    } else {
      OUTPOST_RETURN_IF_ERROR(ParseContent(*content, f + ".content", &msg.content));
    }
    if (auto calls = m.find("tool_calls"); calls != m.end() && !calls->is_null()) {
      if (rs != "assistant") {
        return Status::InvalidArgument(
            "'" + f + ".tool_calls' is only allowed on assistant messages", f + ".tool_calls");
      }
      if (!calls->is_array()) return WrongType(f + ".tool_calls", "an array", *calls);
      for (size_t k = 0; k < calls->size(); ++k) {
        const json& c = (*calls)[k];
        const std::string cf = f + ".tool_calls[" + std::to_string(k) + "]";
        if (!c.is_object() || !c.contains("function") || !c["function"].is_object() ||
            !c["function"].value("name", json()).is_string()) {
          return Status::InvalidArgument(
              "'" + cf +
                  "' must be {\"id\", \"type\": \"function\", \"function\": {\"name\", "
                  "\"arguments\"}}",
              cf);
        }
        // Text that the chat template parses and walks level by level.
        if (const json& args = c["function"].value("arguments", json()); args.is_string()) {
          OUTPOST_RETURN_IF_ERROR(util::CheckJsonDepth(args.get_ref<const std::string&>(),
                                                       "'" + cf + ".function.arguments'",
                                                       cf + ".function.arguments"));
        }
      }
      msg.tool_calls = calls->dump();
    }
    // The thinking of an earlier answer, sent back as llama-server returns
    // it (reasoning_content) or as newer vLLM and OpenRouter do (reasoning):
    // templates that show it again (Qwen 3 after a tool call, gpt-oss) get it.
    for (const char* key : {"reasoning_content", "reasoning"}) {
      auto r = m.find(key);
      if (r == m.end() || r->is_null()) continue;
      const std::string rf = f + "." + key;
      if (rs != "assistant") {
        return Status::InvalidArgument("'" + rf + "' is only allowed on assistant messages", rf);
      }
      if (!r->is_string()) return WrongType(rf, "a string", *r);
      if (msg.reasoning.empty()) msg.reasoning = r->get<std::string>();
    }
    if (rs == "tool") {
      auto id = m.find("tool_call_id");
      if (id == m.end() || !id->is_string()) {
        return Status::InvalidArgument("'" + f + ".tool_call_id' is required on tool messages",
                                       f + ".tool_call_id");
      }
      msg.tool_call_id = id->get<std::string>();
    }
    r->messages.push_back(std::move(msg));
  }
  return Status::Ok();
}

// Variables the template is given already: a kwarg may not replace them.
bool TemplateOwns(const std::string& name) {
  static const char* const kOwned[] = {
      "messages",  "tools",       "add_generation_prompt", "bos_token",
      "eos_token", "tool_choice", "builtin_tools",         "parallel_tool_calls"};
  return std::any_of(std::begin(kOwned), std::end(kOwned),
                     [&](const char* o) { return name == o; });
}

// A thinking model's options: reasoning_format (llama-server's),
// reasoning_effort (OpenAI's), chat_template_kwargs (llama-server's and
// vLLM's; enable_thinking among them is Qwen 3's switch).
Status ParseChatOptions(const json& j, ParsedRequest* r) {
  engine::ChatOptions& o = r->chat_options;
  if (auto it = j.find("reasoning_format"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) return WrongType("reasoning_format", "a string", *it);
    const std::string v = it->get<std::string>();
    if (v == "none") {
      o.parse_reasoning = false;
    } else if (v == "auto" || v == "deepseek") {
      o.parse_reasoning = true;
    } else {
      return Status::InvalidArgument(
          "'reasoning_format' must be 'auto', 'deepseek' or 'none', got '" + v + "'",
          "reasoning_format");
    }
  }
  if (auto it = j.find("chat_template_kwargs"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) return WrongType("chat_template_kwargs", "an object", *it);
    if (it->size() > kMaxTemplateKwargs) {
      return Status::InvalidArgument("'chat_template_kwargs' has " + std::to_string(it->size()) +
                                         " members; at most " + std::to_string(kMaxTemplateKwargs),
                                     "chat_template_kwargs");
    }
    for (const auto& [name, value] : it->items()) {
      const std::string f = "chat_template_kwargs." + name;
      if (TemplateOwns(name)) {
        return Status::InvalidArgument(
            "'" + f + "' cannot be set: the server gives the template its " + name, f);
      }
      if (name == "enable_thinking") {
        if (!value.is_boolean()) return WrongType(f, "a boolean", value);
        o.enable_thinking = value.get<bool>();
      }
      o.template_kwargs.emplace_back(name, value.dump());
    }
  }
  if (auto it = j.find("reasoning_effort"); it != j.end() && !it->is_null()) {
    OUTPOST_RETURN_IF_ERROR(ApplyReasoningEffort(*it, "reasoning_effort", &o));
  }
  int64_t budget = -1;
  bool given = false;
  OUTPOST_RETURN_IF_ERROR(GetInt(j, "reasoning_budget_tokens", -1, 1 << 20, &budget, &given));
  if (given) r->sampling.thinking_budget = static_cast<int32_t>(budget);
  if (auto it = j.find("reasoning_budget_message"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) return WrongType("reasoning_budget_message", "a string", *it);
    if (it->get_ref<const std::string&>().size() > kMaxBudgetMessage) {
      return Status::InvalidArgument("'reasoning_budget_message' must be at most " +
                                         std::to_string(kMaxBudgetMessage) + " bytes",
                                     "reasoning_budget_message");
    }
    r->sampling.thinking_budget_message = it->get<std::string>();
  }
  return Status::Ok();
}

// Token ids of one prompt (field names the array), checked against n_vocab.
Status ParseTokenPrompt(const json& p, const std::string& field, int32_t n_vocab,
                        std::vector<engine::Token>* out) {
  if (p.empty()) return Status::InvalidArgument("'" + field + "' must not be empty", field);
  for (size_t i = 0; i < p.size(); ++i) {
    const std::string f = field + "[" + std::to_string(i) + "]";
    if (!p[i].is_number_integer()) return WrongType(f, "a token id (integer)", p[i]);
    const int64_t t = p[i].get<int64_t>();
    OUTPOST_RETURN_IF_ERROR(engine::CheckTokenId(t, n_vocab, f));
    out->push_back(static_cast<engine::Token>(t));
  }
  return Status::Ok();
}

// prompt: a string, token ids, or an array of strings / token-id arrays
// (several prompts: batch_prompts).
Status ParsePrompt(const json& body, int32_t n_vocab, ParsedRequest* r) {
  auto it = body.find("prompt");
  if (it == body.end()) return Status::InvalidArgument("'prompt' is required", "prompt");
  const json& p = *it;
  if (p.is_string()) {
    r->prompt = p.get<std::string>();
    // Filling in the middle, the text before the gap may be empty (the
    // cursor at the start of a file).
    const bool gap = r->infill && !r->infill->suffix.empty();
    if (r->prompt.empty() && !gap) {
      return Status::InvalidArgument("'prompt' must not be empty", "prompt");
    }
    return Status::Ok();
  }
  if (!p.is_array()) {
    return WrongType("prompt",
                     "a string, an array of strings, an array of token ids, or an array of such "
                     "arrays",
                     p);
  }
  if (p.empty()) return Status::InvalidArgument("'prompt' must not be empty", "prompt");
  if (p[0].is_number()) return ParseTokenPrompt(p, "prompt", n_vocab, &r->prompt_tokens);
  if (p.size() > 128) {
    return Status::InvalidArgument(
        "'prompt' may hold at most 128 prompts, got " + std::to_string(p.size()), "prompt");
  }
  std::vector<router::BatchPrompt> list;
  for (size_t i = 0; i < p.size(); ++i) {
    const std::string f = "prompt[" + std::to_string(i) + "]";
    router::BatchPrompt one;
    if (p[i].is_string()) {
      one.text = p[i].get<std::string>();
      if (one.text.empty()) return Status::InvalidArgument("'" + f + "' must not be empty", f);
    } else if (p[i].is_array()) {
      OUTPOST_RETURN_IF_ERROR(ParseTokenPrompt(p[i], f, n_vocab, &one.tokens));
    } else {
      return WrongType(f, "a string or an array of token ids", p[i]);
    }
    list.push_back(std::move(one));
  }
  if (list.size() == 1) {
    r->prompt = std::move(list[0].text);
    r->prompt_tokens = std::move(list[0].tokens);
  } else {
    r->batch_prompts = std::move(list);
  }
  return Status::Ok();
}

// OpenAI's `suffix`: the text after the completion, which a model trained
// to fill in the middle writes toward (engine/infill.h). Text prompts only.
Status ParseSuffix(const json& body, ParsedRequest* r) {
  auto it = body.find("suffix");
  if (it == body.end() || it->is_null()) return Status::Ok();
  if (!it->is_string()) return WrongType("suffix", "a string", *it);
  r->infill.emplace();
  r->infill->suffix = it->get<std::string>();
  return Status::Ok();
}

// What a suffix cannot go with, once the prompt is read.
Status CheckSuffix(const ParsedRequest& r) {
  if (!r.infill) return Status::Ok();
  const bool tokens = !r.prompt_tokens.empty() ||
                      std::any_of(r.batch_prompts.begin(), r.batch_prompts.end(),
                                  [](const router::BatchPrompt& p) { return !p.tokens.empty(); });
  if (tokens) {
    return Status::InvalidArgument(
        "'suffix' needs the prompt as text: the gap's surroundings are tokenized around the "
        "model's fill-in-the-middle tokens",
        "suffix");
  }
  if (r.echo) {
    return Status::InvalidArgument(
        "'echo' cannot be combined with 'suffix' (the answer is the middle alone)", "echo");
  }
  return Status::Ok();
}

Status ParseStop(const json& body, ParsedRequest* r) {
  auto it = body.find("stop");
  if (it == body.end() || it->is_null()) return Status::Ok();
  if (it->is_string()) {
    if (!it->get<std::string>().empty()) r->stop.push_back(it->get<std::string>());
    return Status::Ok();
  }
  if (!it->is_array()) return WrongType("stop", "a string or an array of strings", *it);
  if (it->size() > 16) {
    return Status::InvalidArgument(
        "'stop' may hold at most 16 strings, got " + std::to_string(it->size()), "stop");
  }
  for (size_t i = 0; i < it->size(); ++i) {
    const json& s = (*it)[i];
    if (!s.is_string()) return WrongType("stop[" + std::to_string(i) + "]", "a string", s);
    if (!s.get<std::string>().empty()) r->stop.push_back(s.get<std::string>());
  }
  return Status::Ok();
}

Status ParseLogitBias(const json& body, int32_t n_vocab, ParsedRequest* r) {
  auto it = body.find("logit_bias");
  if (it == body.end() || it->is_null()) return Status::Ok();
  if (!it->is_object())
    return WrongType("logit_bias", "an object mapping token ids to biases", *it);
  for (auto& [key, val] : it->items()) {
    const std::string f = "logit_bias." + key;
    char* end = nullptr;
    const long long tok = std::strtoll(key.c_str(), &end, 10);
    if (key.empty() || *end != '\0') {
      return Status::InvalidArgument("'logit_bias' key '" + key + "' is not a token id",
                                     "logit_bias");
    }
    OUTPOST_RETURN_IF_ERROR(engine::CheckTokenId(tok, n_vocab, "logit_bias"));
    if (!val.is_number()) return WrongType(f, "a number", val);
    const double b = val.get<double>();
    if (!(b >= -100.0 && b <= 100.0)) {
      return Status::InvalidArgument("'" + f + "' must be between -100 and 100, got " + val.dump(),
                                     f);
    }
    r->sampling.logit_bias.emplace_back(static_cast<engine::Token>(tok), static_cast<float>(b));
  }
  return Status::Ok();
}

bool ValidName(const std::string& n) {
  bool ok = !n.empty() && n.size() <= 64;
  for (char c : n) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-');
  return ok;
}

// tools: [{"type": "function", "function": {name, description, parameters}}],
// tool_choice: none | auto | required | {"type": "function", "function": {"name"}},
// parallel_tool_calls: boolean.
Status ParseTools(const json& body, ParsedRequest* r) {
  auto it = body.find("tools");
  if (it != body.end() && !it->is_null()) {
    if (!it->is_array()) return WrongType("tools", "an array", *it);
    if (it->size() > 128) {
      return Status::InvalidArgument("'tools' may hold at most 128 functions", "tools");
    }
    for (size_t i = 0; i < it->size(); ++i) {
      const std::string f = "tools[" + std::to_string(i) + "]";
      const json& t = (*it)[i];
      if (!t.is_object()) return WrongType(f, "an object", t);
      if (t.value("type", json()) != "function") {
        return Status::InvalidArgument("'" + f + ".type' must be \"function\"", f + ".type");
      }
      auto fn = t.find("function");
      if (fn == t.end() || !fn->is_object()) {
        return Status::InvalidArgument("'" + f + ".function' is required (an object)",
                                       f + ".function");
      }
      router::ToolFunction tf;
      auto name = fn->find("name");
      if (name == fn->end() || !name->is_string() || !ValidName(name->get<std::string>())) {
        return Status::InvalidArgument(
            "'" + f + ".function.name' must be 1 to 64 of a-z, A-Z, 0-9, _ and -",
            f + ".function.name");
      }
      tf.name = name->get<std::string>();
      for (const auto& other : r->tools.functions) {
        if (other.name == tf.name) {
          return Status::InvalidArgument(
              "'" + f + ".function.name' '" + tf.name + "' is declared twice",
              f + ".function.name");
        }
      }
      if (auto d = fn->find("description"); d != fn->end() && !d->is_null()) {
        if (!d->is_string()) return WrongType(f + ".function.description", "a string", *d);
        tf.description = d->get<std::string>();
      }
      if (auto p = fn->find("parameters"); p != fn->end() && !p->is_null()) {
        if (!p->is_object()) return WrongType(f + ".function.parameters", "an object", *p);
        tf.parameters = p->dump();
      }
      r->tools.functions.push_back(std::move(tf));
    }
  }
  using Mode = router::ToolChoice::Mode;
  if (auto c = body.find("tool_choice"); c != body.end() && !c->is_null()) {
    if (c->is_string()) {
      const std::string v = c->get<std::string>();
      if (v == "none") {
        r->tools.choice.mode = Mode::kNone;
      } else if (v == "auto") {
        r->tools.choice.mode = Mode::kAuto;
      } else if (v == "required") {
        r->tools.choice.mode = Mode::kRequired;
      } else {
        return Status::InvalidArgument(
            "'tool_choice' must be none, auto, required or {\"type\": \"function\", "
            "\"function\": {\"name\": ...}}, got '" +
                v + "'",
            "tool_choice");
      }
    } else if (c->is_object()) {
      const json fn = c->value("function", json());
      if (c->value("type", json()) != "function" || !fn.is_object() ||
          !fn.value("name", json()).is_string()) {
        return Status::InvalidArgument(
            "'tool_choice' must be {\"type\": \"function\", \"function\": {\"name\": ...}}",
            "tool_choice");
      }
      r->tools.choice.mode = Mode::kFunction;
      r->tools.choice.function = fn["name"].get<std::string>();
      bool known = false;
      for (const auto& f : r->tools.functions) known = known || f.name == r->tools.choice.function;
      if (!known) {
        return Status::InvalidArgument("'tool_choice' names the function '" +
                                           r->tools.choice.function + "', which is not in 'tools'",
                                       "tool_choice");
      }
    } else {
      return WrongType("tool_choice", "a string or an object", *c);
    }
    if (r->tools.functions.empty() && r->tools.choice.mode != Mode::kNone &&
        r->tools.choice.mode != Mode::kAuto) {
      return Status::InvalidArgument("'tool_choice' requires 'tools'", "tool_choice");
    }
  }
  OUTPOST_RETURN_IF_ERROR(
      GetBool(body, "parallel_tool_calls", "parallel_tool_calls", &r->tools.parallel));
  return Status::Ok();
}

// response_format: {"type": "text" | "json_object" | "json_schema", "json_schema": {...}}.
Status ParseResponseFormat(const json& body, ParsedRequest* r) {
  auto it = body.find("response_format");
  if (it == body.end() || it->is_null()) return Status::Ok();
  if (!it->is_object()) return WrongType("response_format", "an object", *it);
  auto type = it->find("type");
  if (type == it->end() || !type->is_string()) {
    return Status::InvalidArgument(
        "'response_format.type' is required: text, json_object or json_schema",
        "response_format.type");
  }
  const std::string t = type->get<std::string>();
  using Type = engine::ResponseFormat::Type;
  if (t == "text") {
    r->response_format.type = Type::kText;
    return Status::Ok();
  }
  if (t == "json_object") {
    r->response_format.type = Type::kJsonObject;
    return Status::Ok();
  }
  if (t != "json_schema") {
    return Status::InvalidArgument(
        "'response_format.type' must be text, json_object or json_schema, got '" + t + "'",
        "response_format.type");
  }
  auto js = it->find("json_schema");
  if (js == it->end() || js->is_null()) {
    return Status::InvalidArgument(
        "'response_format.json_schema' is required when type is json_schema",
        "response_format.json_schema");
  }
  if (!js->is_object()) return WrongType("response_format.json_schema", "an object", *js);
  auto name = js->find("name");
  if (name == js->end() || !name->is_string()) {
    return Status::InvalidArgument("'response_format.json_schema.name' is required (a string)",
                                   "response_format.json_schema.name");
  }
  const std::string n = name->get<std::string>();
  if (!ValidName(n)) {
    return Status::InvalidArgument(
        "'response_format.json_schema.name' must be 1 to 64 of a-z, A-Z, 0-9, _ and -, got '" + n +
            "'",
        "response_format.json_schema.name");
  }
  bool strict = false;
  OUTPOST_RETURN_IF_ERROR(GetBool(*js, "strict", "response_format.json_schema.strict", &strict));
  auto schema = js->find("schema");
  if (schema == js->end() || schema->is_null()) {
    r->response_format.type = Type::kJsonObject;  // no schema: any JSON object
    return Status::Ok();
  }
  if (!schema->is_object())
    return WrongType("response_format.json_schema.schema", "an object", *schema);
  r->response_format.type = Type::kJsonSchema;
  r->response_format.schema = schema->dump();
  return Status::Ok();
}

// grammar: llama-server's GBNF constraint (a string; "" is none). Checked
// against the vocabulary when the request is prepared; here, that it is the
// only constraint.
Status ParseGrammarField(const json& body, ParsedRequest* r) {
  auto it = body.find("grammar");
  if (it == body.end() || it->is_null()) return Status::Ok();
  if (!it->is_string()) return WrongType("grammar", "a string (GBNF)", *it);
  if (it->get_ref<const std::string&>().empty()) return Status::Ok();
  if (r->response_format.type != engine::ResponseFormat::Type::kText) {
    return Status::InvalidArgument(
        "'grammar' cannot be combined with 'response_format': give one constraint", "grammar");
  }
  if (r->tools.active()) {
    return Status::InvalidArgument(
        "'grammar' cannot be combined with 'tools' (the calls have a grammar of their own)",
        "grammar");
  }
  r->response_format.type = engine::ResponseFormat::Type::kGrammar;
  r->response_format.grammar = it->get<std::string>();
  return Status::Ok();
}

// The schema and the tools' parameters as the client wrote them: their
// properties' order is the order of the answer's (the body was read into
// sorted objects), read again from the body.
Status KeepWrittenOrder(std::string_view body, ParsedRequest* r) {
  const bool schema = r->response_format.type == engine::ResponseFormat::Type::kJsonSchema;
  const bool parameters =
      std::any_of(r->tools.functions.begin(), r->tools.functions.end(),
                  [](const router::ToolFunction& f) { return !f.parameters.empty(); });
  if (!schema && !parameters) return Status::Ok();
  nlohmann::ordered_json o;
  OUTPOST_ASSIGN_OR_RETURN(o, OrderedMembers(body, {"response_format", "tools"}));
  if (schema) r->response_format.schema = o["response_format"]["json_schema"]["schema"].dump();
  for (size_t i = 0; i < r->tools.functions.size(); ++i) {
    if (r->tools.functions[i].parameters.empty()) continue;
    r->tools.functions[i].parameters = o["tools"][i]["function"]["parameters"].dump();
  }
  return Status::Ok();
}

}  // namespace

StatusOr<ParsedRequest> ParseRequest(Endpoint endpoint, std::string_view body, int32_t n_vocab,
                                     bool for_tokenize) {
  json j;
  OUTPOST_ASSIGN_OR_RETURN(j, ParseObjectBody(body));

  ParsedRequest r;
  r.endpoint = endpoint;
  if (auto it = j.find("model"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) return WrongType("model", "a string", *it);
    r.model = it->get<std::string>();
  }
  if (endpoint == Endpoint::kChat) {
    OUTPOST_RETURN_IF_ERROR(ParseMessages(j, &r));
  } else {
    OUTPOST_RETURN_IF_ERROR(ParseSuffix(j, &r));
    OUTPOST_RETURN_IF_ERROR(ParsePrompt(j, n_vocab, &r));
    OUTPOST_RETURN_IF_ERROR(GetBool(j, "echo", "echo", &r.echo));
    OUTPOST_RETURN_IF_ERROR(CheckSuffix(r));
  }
  OUTPOST_RETURN_IF_ERROR(GetBool(j, "stream", "stream", &r.stream));
  if (auto it = j.find("user"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) return WrongType("user", "a string", *it);
    r.user = it->get<std::string>();
    if (r.user.size() > 256) {
      return Status::InvalidArgument("'user' must be at most 256 characters", "user");
    }
  }
  if (auto it = j.find("service_tier"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) return WrongType("service_tier", "a string", *it);
    const std::string tier = it->get<std::string>();
    if (tier == "priority") {
      r.service_tier = scheduler::Priority::kPriority;
    } else if (tier == "default" || tier == "auto") {
      r.service_tier = scheduler::Priority::kInteractive;
    } else if (tier == "flex") {
      r.service_tier = scheduler::Priority::kFlex;
    } else {
      return Status::InvalidArgument(
          "'service_tier' must be 'auto', 'default', 'flex' or 'priority', got '" + tier + "'",
          "service_tier");
    }
  }
  OUTPOST_RETURN_IF_ERROR(GetBool(j, "ignore_eos", "ignore_eos", &r.ignore_eos));
  OUTPOST_RETURN_IF_ERROR(GetBool(j, "cache_prompt", "cache_prompt", &r.cache_prompt));
  if (auto it = j.find("stream_options"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) return WrongType("stream_options", "an object", *it);
    if (!r.stream) {
      return Status::InvalidArgument("'stream_options' is only allowed when 'stream' is true",
                                     "stream_options");
    }
    OUTPOST_RETURN_IF_ERROR(
        GetBool(*it, "include_usage", "stream_options.include_usage", &r.include_usage));
  }

  auto& s = r.sampling;
  OUTPOST_RETURN_IF_ERROR(GetNumber(j, "temperature", 0.0, 2.0, &s.temperature));
  OUTPOST_RETURN_IF_ERROR(GetNumber(j, "top_p", 0.0, 1.0, &s.top_p));
  OUTPOST_RETURN_IF_ERROR(GetNumber(j, "min_p", 0.0, 1.0, &s.min_p));
  OUTPOST_RETURN_IF_ERROR(GetNumber(j, "presence_penalty", -2.0, 2.0, &s.presence_penalty));
  OUTPOST_RETURN_IF_ERROR(GetNumber(j, "frequency_penalty", -2.0, 2.0, &s.frequency_penalty));
  OUTPOST_RETURN_IF_ERROR(GetNumber(j, "repetition_penalty", 0.01, 10.0, &s.repeat_penalty));
  if (j.contains("top_p") && j["top_p"].is_number() && j["top_p"].get<double>() <= 0.0) {
    return Status::InvalidArgument("'top_p' must be greater than 0", "top_p");
  }
  int64_t v = 0;
  bool given = false;
  OUTPOST_RETURN_IF_ERROR(GetInt(j, "top_k", 0, 1 << 20, &v, &given));
  if (given) s.top_k = static_cast<int32_t>(v);
  given = false;
  OUTPOST_RETURN_IF_ERROR(GetInt(j, "seed", std::numeric_limits<int64_t>::min(),
                                 std::numeric_limits<int64_t>::max(), &v, &given));
  if (given) {
    s.has_seed = true;
    s.seed = static_cast<uint32_t>(v);
  }
  given = false;
  OUTPOST_RETURN_IF_ERROR(GetInt(j, "max_tokens", 1, 1 << 30, &v, &given));
  if (given) r.max_tokens = static_cast<int32_t>(v);
  given = false;
  OUTPOST_RETURN_IF_ERROR(GetInt(j, "max_completion_tokens", 1, 1 << 30, &v, &given));
  if (given) r.max_tokens = static_cast<int32_t>(v);
  given = false;
  v = 1;
  OUTPOST_RETURN_IF_ERROR(GetInt(j, "n", 1, 128, &v, &given));
  r.n = static_cast<int32_t>(v);
  OUTPOST_RETURN_IF_ERROR(ParseStop(j, &r));
  OUTPOST_RETURN_IF_ERROR(ParseLogitBias(j, n_vocab, &r));
  // Chat: logprobs (boolean) + top_logprobs 0-20. Completions: logprobs 0-20.
  if (endpoint == Endpoint::kChat) {
    bool logprobs = false;
    OUTPOST_RETURN_IF_ERROR(GetBool(j, "logprobs", "logprobs", &logprobs));
    int64_t top = 0;
    given = false;
    OUTPOST_RETURN_IF_ERROR(GetInt(j, "top_logprobs", 0, 20, &top, &given));
    if (given && !logprobs) {
      return Status::InvalidArgument("'top_logprobs' requires 'logprobs': true", "top_logprobs");
    }
    if (logprobs) r.top_logprobs = static_cast<int32_t>(top);
  } else {
    int64_t top = -1;
    OUTPOST_RETURN_IF_ERROR(GetInt(j, "logprobs", 0, 20, &top, nullptr));
    r.top_logprobs = static_cast<int32_t>(top);
  }
  OUTPOST_RETURN_IF_ERROR(ParseResponseFormat(j, &r));
  if (endpoint == Endpoint::kChat) {
    OUTPOST_RETURN_IF_ERROR(ParseTools(j, &r));
    OUTPOST_RETURN_IF_ERROR(ParseChatOptions(j, &r));
  }
  OUTPOST_RETURN_IF_ERROR(ParseGrammarField(j, &r));
  if (endpoint == Endpoint::kChat) OUTPOST_RETURN_IF_ERROR(ParsePromptEnd(j, for_tokenize, &r));
  OUTPOST_RETURN_IF_ERROR(KeepWrittenOrder(body, &r));
  return r;
}

Status ApplyReasoningEffort(const json& effort, const std::string& field,
                            engine::ChatOptions* options) {
  if (!effort.is_string()) return WrongType(field, "a string", effort);
  const std::string v = effort.get<std::string>();
  if (v == "none") {
    options->enable_thinking = false;
    return Status::Ok();
  }
  if (v != "minimal" && v != "low" && v != "medium" && v != "high" && v != "xhigh") {
    return Status::InvalidArgument("'" + field +
                                       "' must be 'none', 'minimal', 'low', 'medium', 'high' or "
                                       "'xhigh', got '" +
                                       v + "'",
                                   field);
  }
  options->template_kwargs.emplace_back("reasoning_effort", json(v).dump());
  return Status::Ok();
}

StatusOr<scheduler::Priority> ParsePriority(std::string_view h) {
  if (h.empty() || h == "interactive") return scheduler::Priority::kInteractive;
  if (h == "batch") return scheduler::Priority::kBatch;
  return Status::InvalidArgument(
      "header X-Outpost-Priority must be 'interactive' or 'batch', got '" + std::string(h) + "'",
      "X-Outpost-Priority");
}

scheduler::Priority AdmissionClass(scheduler::Priority header, const ParsedRequest& request) {
  if (header == scheduler::Priority::kBatch) return header;
  return request.service_tier.value_or(scheduler::Priority::kInteractive);
}

StatusOr<std::optional<router::DataClass>> ParseDataClassHeader(std::string_view h) {
  if (h.empty()) return std::optional<router::DataClass>();
  auto c = router::ParseDataClass(h);
  if (!c) {
    return Status::InvalidArgument(
        "header X-Data-Class must be public, internal or restricted, got '" + std::string(h) + "'",
        "X-Data-Class");
  }
  return std::optional<router::DataClass>(*c);
}

StatusOr<router::Tier> ParseTierHeader(std::string_view h) {
  auto t = router::ParseTier(h);
  if (!t) {
    return Status::InvalidArgument(
        "header X-Outpost-Tier must be 'local' or 'central', got '" + std::string(h) + "'",
        "X-Outpost-Tier");
  }
  return *t;
}

StatusOr<std::optional<int64_t>> ParseLatencyBudgetHeader(std::string_view h) {
  if (h.empty()) return std::optional<int64_t>();
  int64_t v = 0;
  bool ok = h.size() <= 12;
  for (char c : h) {
    ok = ok && c >= '0' && c <= '9';
    if (ok) v = v * 10 + (c - '0');
  }
  if (!ok || v <= 0) {
    return Status::InvalidArgument(
        "header X-Latency-Budget-Ms must be a positive whole number of milliseconds, got '" +
            std::string(h) + "'",
        "X-Latency-Budget-Ms");
  }
  return std::optional<int64_t>(v);
}

}  // namespace outpost::api

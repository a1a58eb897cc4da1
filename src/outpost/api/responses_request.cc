#include "outpost/api/responses_request.h"

#include <climits>
#include <nlohmann/json.hpp>

#include "outpost/api/json_fields.h"
#include "outpost/api/openai_response.h"

#include "outpost/util/json_text.h"
#include "outpost/util/status_macros.h"

namespace outpost::api {
namespace {

using nlohmann::json;

Status Unsupported(const std::string& field, const std::string& what) {
  return Status::InvalidArgument("'" + field + "': " + what, field);
}

bool Given(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && !it->is_null();
}

// A string field of an item; `field` names it in errors.
Status ItemString(const json& item, const char* key, const std::string& field, std::string* out) {
  auto it = item.find(key);
  if (it == item.end() || it->is_null()) {
    return Status::InvalidArgument("'" + field + "." + key + "' is required", field + "." + key);
  }
  if (!it->is_string()) return WrongType(field + "." + key, "a string", *it);
  *out = it->get<std::string>();
  return Status::Ok();
}

// A message's content: a string, or parts of type input_text / output_text
// (and refusal, from an earlier answer). Returns the text as chat content.
Status ContentText(const json& content, const std::string& field, std::string* out) {
  if (content.is_string()) {
    *out = content.get<std::string>();
    return Status::Ok();
  }
  if (!content.is_array())
    return WrongType(field, "a string or an array of content parts", content);
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string pf = field + "[" + std::to_string(i) + "]";
    const json& part = content[i];
    if (!part.is_object()) return WrongType(pf, "an object", part);
    auto type = part.find("type");
    if (type == part.end() || !type->is_string()) {
      return Status::InvalidArgument("'" + pf + ".type' is required and must be a string",
                                     pf + ".type");
    }
    const std::string t = type->get<std::string>();
    std::string text;
    if (t == "input_text" || t == "output_text") {
      OUTPOST_RETURN_IF_ERROR(ItemString(part, "text", pf, &text));
    } else if (t == "refusal") {
      OUTPOST_RETURN_IF_ERROR(ItemString(part, "refusal", pf, &text));
    } else if (t == "input_image" || t == "input_file" || t == "input_audio") {
      return Status::InvalidArgument(
          "content part type '" + t + "' is not supported by this model (only text)", pf + ".type");
    } else {
      return Status::InvalidArgument(
          "'" + pf + ".type' must be input_text or output_text, got '" + t + "'", pf + ".type");
    }
    if (!out->empty()) *out += "\n";
    *out += text;
  }
  return Status::Ok();
}

// Items as chat messages, appended to `messages`. Function calls join the
// assistant message before them (or start one), as one assistant turn.
// `field` names the array in errors ("input").
Status ItemMessages(const json& input, const std::string& field, json* messages) {
  for (size_t i = 0; i < input.size(); ++i) {
    const std::string f = field + "[" + std::to_string(i) + "]";
    const json& item = input[i];
    if (!item.is_object()) return WrongType(f, "an object", item);
    std::string type = "message";
    if (auto t = item.find("type"); t != item.end() && !t->is_null()) {
      if (!t->is_string()) return WrongType(f + ".type", "a string", *t);
      type = t->get<std::string>();
    }
    const bool after_assistant =
        !messages->empty() && messages->back().value("role", "") == "assistant";
    if (type == "message") {
      std::string role;
      OUTPOST_RETURN_IF_ERROR(ItemString(item, "role", f, &role));
      if (role != "user" && role != "system" && role != "developer" && role != "assistant") {
        return Status::InvalidArgument(
            "'" + f + ".role' must be one of user, system, developer, assistant; got '" + role +
                "'",
            f + ".role");
      }
      auto content = item.find("content");
      if (content == item.end() || content->is_null()) {
        return Status::InvalidArgument("'" + f + ".content' is required", f + ".content");
      }
      std::string text;
      OUTPOST_RETURN_IF_ERROR(ContentText(*content, f + ".content", &text));
      if (role == "assistant" && after_assistant &&
          messages->back().contains("reasoning_content") && messages->back()["content"].is_null() &&
          !messages->back().contains("tool_calls")) {
        messages->back()["content"] = text;  // the answer its reasoning item came before
      } else {
        messages->push_back({{"role", role}, {"content", text}});
      }
    } else if (type == "function_call") {
      std::string call_id, name, arguments;
      OUTPOST_RETURN_IF_ERROR(ItemString(item, "call_id", f, &call_id));
      OUTPOST_RETURN_IF_ERROR(ItemString(item, "name", f, &name));
      OUTPOST_RETURN_IF_ERROR(ItemString(item, "arguments", f, &arguments));
      // Named here: the chat request it becomes would name a message instead.
      OUTPOST_RETURN_IF_ERROR(
          util::CheckJsonDepth(arguments, "'" + f + ".arguments'", f + ".arguments"));
      const json call = {{"id", call_id},
                         {"type", "function"},
                         {"function", {{"name", name}, {"arguments", arguments}}}};
      if (!after_assistant) messages->push_back({{"role", "assistant"}, {"content", nullptr}});
      json& turn = messages->back();
      if (!turn.contains("tool_calls")) turn["tool_calls"] = json::array();
      turn["tool_calls"].push_back(call);
    } else if (type == "function_call_output") {
      std::string call_id;
      OUTPOST_RETURN_IF_ERROR(ItemString(item, "call_id", f, &call_id));
      auto output = item.find("output");
      if (output == item.end() || output->is_null()) {
        return Status::InvalidArgument("'" + f + ".output' is required", f + ".output");
      }
      std::string text;
      OUTPOST_RETURN_IF_ERROR(ContentText(*output, f + ".output", &text));
      messages->push_back({{"role", "tool"}, {"tool_call_id", call_id}, {"content", text}});
    } else if (type == "reasoning") {
      // An earlier answer's thinking (its reasoning_text parts; summaries and
      // encrypted content are not this model's): the assistant turn that
      // follows carries it, for templates that show it again.
      std::string text;
      if (auto c = item.find("content"); c != item.end() && c->is_array()) {
        for (const auto& part : *c) {
          if (part.is_object() && part.value("type", "") == "reasoning_text" &&
              part.value("text", json()).is_string()) {
            text += part["text"].get<std::string>();
          }
        }
      }
      if (!text.empty()) {
        messages->push_back(
            {{"role", "assistant"}, {"content", nullptr}, {"reasoning_content", text}});
      }
    } else if (type == "item_reference") {
      return Unsupported(f + ".type",
                         "item_reference is resolved only in a Responses request's 'input' and "
                         "in conversation items; send the item itself here");
    } else {
      return Status::InvalidArgument("'" + f + ".type' '" + type +
                                         "' is not supported (message, function_call, "
                                         "function_call_output, reasoning)",
                                     f + ".type");
    }
  }
  // Thinking that no answer followed says nothing to the template.
  if (!messages->empty() && messages->back().contains("reasoning_content") &&
      messages->back()["content"].is_null() && !messages->back().contains("tool_calls")) {
    messages->erase(messages->size() - 1);
  }
  return Status::Ok();
}

// input: a string (one user message) or an array of items, as items.
StatusOr<json> InputItems(const json& body) {
  auto it = body.find("input");
  if (it == body.end() || it->is_null()) {
    return Status::InvalidArgument("'input' is required", "input");
  }
  const json& input = *it;
  if (input.is_string()) {
    if (input.get<std::string>().empty()) {
      return Status::InvalidArgument("'input' must not be empty", "input");
    }
    return json::array({{{"type", "message"}, {"role", "user"}, {"content", input}}});
  }
  if (!input.is_array()) return WrongType("input", "a string or an array of input items", input);
  if (input.empty()) return Status::InvalidArgument("'input' must not be empty", "input");
  return input;
}

// This request's items as input_items lists them: a type, content as
// parts, and an id each.
json ListedItems(const json& items, util::Random& random) {
  json out = json::array();
  for (json item : items) {
    const auto t = item.find("type");
    const std::string type =
        t != item.end() && t->is_string() ? t->get<std::string>() : std::string("message");
    item["type"] = type;
    if (type == "message") {
      if (auto c = item.find("content"); c != item.end() && c->is_string()) {
        const bool answer = item["role"] == "assistant";
        *c = json::array({{{"type", answer ? "output_text" : "input_text"}, {"text", *c}}});
      }
      if (!item.contains("status")) item["status"] = "completed";
    }
    if (!item.contains("id") || !item["id"].is_string()) {
      const char* prefix = type == "function_call"          ? "fc_"
                           : type == "function_call_output" ? "fco_"
                           : type == "reasoning"            ? "rs_"
                                                            : "msg_";
      item["id"] = NewId(prefix, random);
    }
    out.push_back(std::move(item));
  }
  return out;
}

// conversation: "conv_..." or {"id": "conv_..."}.
StatusOr<std::string> ConversationId(const json& v) {
  const json* id = &v;
  std::string field = "conversation";
  if (v.is_object()) {
    field = "conversation.id";
    auto it = v.find("id");
    if (it == v.end() || it->is_null()) {
      return Status::InvalidArgument("'conversation.id' is required", field);
    }
    id = &*it;
  } else if (!v.is_string()) {
    return WrongType(field, "a string or an object with an id", v);
  }
  if (!id->is_string()) return WrongType(field, "a string", *id);
  if (id->get_ref<const std::string&>().empty()) {
    return Status::InvalidArgument("'" + field + "' must not be empty", field);
  }
  return id->get<std::string>();
}

// tools: Responses' flat function tools become chat's nested ones.
Status Tools(const json& body, json* chat) {
  auto it = body.find("tools");
  if (it == body.end() || it->is_null()) return Status::Ok();
  if (!it->is_array()) return WrongType("tools", "an array", *it);
  json tools = json::array();
  for (size_t i = 0; i < it->size(); ++i) {
    const std::string f = "tools[" + std::to_string(i) + "]";
    const json& t = (*it)[i];
    if (!t.is_object()) return WrongType(f, "an object", t);
    auto type = t.find("type");
    if (type == t.end() || !type->is_string()) {
      return Status::InvalidArgument("'" + f + ".type' is required and must be a string",
                                     f + ".type");
    }
    if (*type != "function") {
      return Status::InvalidArgument(
          "'" + f + ".type' '" + type->get<std::string>() +
              "' is not supported: Outpost runs no hosted tools; declare a function and run it "
              "in the client",
          f + ".type");
    }
    json fn = json::object();
    for (const char* key : {"name", "description", "parameters", "strict"}) {
      if (auto v = t.find(key); v != t.end()) fn[key] = *v;
    }
    tools.push_back({{"type", "function"}, {"function", fn}});
  }
  (*chat)["tools"] = std::move(tools);
  return Status::Ok();
}

Status ToolChoice(const json& body, json* chat) {
  auto it = body.find("tool_choice");
  if (it == body.end() || it->is_null()) return Status::Ok();
  if (it->is_string()) {
    (*chat)["tool_choice"] = *it;
    return Status::Ok();
  }
  if (!it->is_object()) return WrongType("tool_choice", "a string or an object", *it);
  auto name = it->find("name");
  if (it->value("type", json()) != "function" || name == it->end() || !name->is_string()) {
    return Status::InvalidArgument(
        "'tool_choice' must be none, auto, required or {\"type\": \"function\", \"name\": ...}",
        "tool_choice");
  }
  (*chat)["tool_choice"] = {{"type", "function"}, {"function", {{"name", *name}}}};
  return Status::Ok();
}

// text.format: {"type": "text" | "json_object" | "json_schema", name, schema, strict}.
Status TextFormat(const json& body, json* chat) {
  auto it = body.find("text");
  if (it == body.end() || it->is_null()) return Status::Ok();
  if (!it->is_object()) return WrongType("text", "an object", *it);
  auto format = it->find("format");
  if (format == it->end() || format->is_null()) return Status::Ok();
  if (!format->is_object()) return WrongType("text.format", "an object", *format);
  auto type = format->find("type");
  if (type == format->end() || !type->is_string()) {
    return Status::InvalidArgument(
        "'text.format.type' is required: text, json_object or json_schema", "text.format.type");
  }
  if (*type != "json_schema") {
    (*chat)["response_format"] = {{"type", *type}};
    return Status::Ok();
  }
  json schema = json::object();
  for (const char* key : {"name", "schema", "strict", "description"}) {
    if (auto v = format->find(key); v != format->end()) schema[key] = *v;
  }
  (*chat)["response_format"] = {{"type", "json_schema"}, {"json_schema", schema}};
  return Status::Ok();
}

}  // namespace

StatusOr<json> ListedInputItems(const json& items, const std::string& field, util::Random& random) {
  if (!items.is_array()) return WrongType(field, "an array of items", items);
  json messages = json::array();
  OUTPOST_RETURN_IF_ERROR(ItemMessages(items, field, &messages));
  return ListedItems(items, random);
}

Status ResolveItemReferences(json* items, const std::string& field, const ItemLookup& lookup,
                             bool* referenced) {
  if (!items->is_array()) return Status::Ok();  // InputItems / ListedInputItems say why
  for (size_t i = 0; i < items->size(); ++i) {
    json& item = (*items)[i];
    if (!item.is_object() || item.value("type", json()) != "item_reference") continue;
    const std::string f = field + "[" + std::to_string(i) + "]";
    std::string id;
    OUTPOST_RETURN_IF_ERROR(ItemString(item, "id", f, &id));
    if (!lookup) {
      return Unsupported(f + ".type",
                         "item_reference needs stored responses, and this server stores none "
                         "(responses_retention: 0); send the item itself");
    }
    std::string found;
    OUTPOST_ASSIGN_OR_RETURN(found, lookup(id, f + ".id"));
    json resolved = json::parse(found, nullptr, false);
    if (!resolved.is_object()) return Status::Internal("the stored item '" + id + "' is damaged");
    if (resolved.value("type", json()) == "item_reference") {
      return Status::Internal("the stored item '" + id + "' is itself a reference");
    }
    item = std::move(resolved);
    if (referenced != nullptr) *referenced = true;
  }
  return Status::Ok();
}

Status ForResponses(Status st) {
  static const std::pair<const char*, const char*> kNames[] = {
      {"max_tokens", "max_output_tokens"},
      {"response_format.json_schema", "text.format"},
      {"response_format", "text.format"},
      {"messages", "input"},
      {"prompt", "input"},
      {"function.", ""},
  };
  std::string message = st.message();
  std::string param = st.param();
  for (const auto& [from, to] : kNames) {
    for (std::string* s : {&message, &param}) {
      for (size_t at = s->find(from); at != std::string::npos; at = s->find(from, at)) {
        s->replace(at, std::string_view(from).size(), to);
        at += std::string_view(to).size();
      }
    }
  }
  Status out(st.code(), message, param);
  if (st.retry_after_s() > 0) out.WithRetryAfter(st.retry_after_s());
  if (!st.error_code().empty()) out.WithErrorCode(st.error_code());
  return out;
}

StatusOr<ResponsesRequest> ParseResponsesRequest(std::string_view body,
                                                 const ResponsesParseOptions& options) {
  json j;
  OUTPOST_ASSIGN_OR_RETURN(j, ParseObjectBody(body));

  if (Given(j, "prompt")) {
    return Unsupported("prompt",
                       "stored prompts are not supported: Outpost keeps none; send the prompt's "
                       "text in 'instructions' or 'input'");
  }
  bool store = true;
  if (auto it = j.find("store"); it != j.end() && !it->is_null()) {
    if (!it->is_boolean()) return WrongType("store", "a boolean", *it);
    store = it->get<bool>();
  }
  bool background = false;
  if (auto it = j.find("background"); it != j.end() && !it->is_null()) {
    if (!it->is_boolean()) return WrongType("background", "a boolean", *it);
    background = it->get<bool>();
  }
  if (background && !options.previous) {
    return Unsupported("background",
                       "a background response is kept for its client to fetch, and this server "
                       "stores no responses (responses_retention: 0)");
  }
  if (background && !store) {
    return Status::InvalidArgument(
        "background: a background response is kept for its client to fetch; it needs store: "
        "true",
        "background");
  }
  std::string previous_id;
  if (auto it = j.find("previous_response_id"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) return WrongType("previous_response_id", "a string", *it);
    previous_id = it->get<std::string>();
    if (previous_id.empty()) {
      return Status::InvalidArgument("'previous_response_id' must not be empty",
                                     "previous_response_id");
    }
    if (!options.previous) {
      return Unsupported("previous_response_id",
                         "this server stores no responses (responses_retention: 0); send "
                         "the whole conversation in 'input'");
    }
  }

  std::string conversation_id;
  if (auto it = j.find("conversation"); it != j.end() && !it->is_null()) {
    OUTPOST_ASSIGN_OR_RETURN(conversation_id, ConversationId(*it));
    if (!previous_id.empty()) {
      return Status::InvalidArgument(
          "'conversation' and 'previous_response_id' are mutually exclusive: continue either a "
          "conversation or a stored response",
          "conversation");
    }
    if (!options.conversation) {
      return Unsupported("conversation",
                         "this server keeps no conversations (responses_retention: 0); send "
                         "the whole conversation in 'input'");
    }
  }

  json chat = json::object();
  json messages = json::array();
  if (auto it = j.find("instructions"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) return WrongType("instructions", "a string", *it);
    messages.push_back({{"role", "system"}, {"content", *it}});
  }
  json context = json::array();  // the earlier turns' items, then this input
  if (!previous_id.empty()) {
    std::string earlier;
    OUTPOST_ASSIGN_OR_RETURN(earlier, options.previous(previous_id));
    context = json::parse(earlier, nullptr, false);
    if (!context.is_array()) {
      return Status::Internal("the stored response '" + previous_id + "' is damaged");
    }
    OUTPOST_RETURN_IF_ERROR(ItemMessages(context, "previous_response_id", &messages));
  }
  if (!conversation_id.empty()) {
    std::string earlier;
    OUTPOST_ASSIGN_OR_RETURN(earlier, options.conversation(conversation_id));
    context = json::parse(earlier, nullptr, false);
    if (!context.is_array()) {
      return Status::Internal("the conversation '" + conversation_id + "' is damaged");
    }
    OUTPOST_RETURN_IF_ERROR(ItemMessages(context, "conversation", &messages));
  }
  json input;
  OUTPOST_ASSIGN_OR_RETURN(input, InputItems(j));
  bool referenced = false;
  // An item_reference names an item of the turns in front of this input (a
  // conversation's own items included: they may never have been in a
  // stored response), else one of a stored response.
  ItemLookup lookup = [&](const std::string& id,
                          const std::string& param) -> StatusOr<std::string> {
    for (auto it = context.rbegin(); it != context.rend(); ++it) {
      if (it->is_object() && it->value("id", json()) == id) return DumpLossy(*it);
    }
    if (options.item) return options.item(id, param);
    return Status::NotFound("no item with id '" + id + "' in the conversation so far", param);
  };
  const bool lookups = options.item || context.size() > 0;
  OUTPOST_RETURN_IF_ERROR(
      ResolveItemReferences(&input, "input", lookups ? lookup : ItemLookup(), &referenced));
  OUTPOST_RETURN_IF_ERROR(ItemMessages(input, "input", &messages));
  if (messages.empty() || (messages.size() == 1 && Given(j, "instructions"))) {
    return Status::InvalidArgument("'input' holds no message (only reasoning items)", "input");
  }
  for (json item : input) {
    // Typed, as every upstream reads items (llama-server needs the type).
    if (!item.contains("type") || item["type"].is_null()) item["type"] = "message";
    context.push_back(std::move(item));
  }
  chat["messages"] = std::move(messages);
  // Settings with the same meaning in both APIs, and llama.cpp-style extensions.
  for (const char* key : {"model",
                          "stream",
                          "temperature",
                          "top_p",
                          "user",
                          "service_tier",
                          "parallel_tool_calls",
                          "seed",
                          "stop",
                          "top_k",
                          "min_p",
                          "presence_penalty",
                          "frequency_penalty",
                          "repetition_penalty",
                          "logit_bias",
                          "ignore_eos",
                          "cache_prompt",
                          "reasoning_format",
                          "chat_template_kwargs",
                          "reasoning_budget_tokens",
                          "reasoning_budget_message"}) {
    if (auto it = j.find(key); it != j.end()) chat[key] = *it;
  }
  json reasoning = {{"effort", nullptr}, {"summary", nullptr}};
  if (auto it = j.find("reasoning"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) return WrongType("reasoning", "an object", *it);
    if (auto e = it->find("effort"); e != it->end() && !e->is_null()) {
      engine::ChatOptions checked;  // named as Responses names it
      OUTPOST_RETURN_IF_ERROR(ApplyReasoningEffort(*e, "reasoning.effort", &checked));
      chat["reasoning_effort"] = *e;
      reasoning["effort"] = *e;
    }
    // A summary is a second model's work; this model's thinking comes as
    // it is (reasoning_text), whatever summary asks.
    if (auto s = it->find("summary"); s != it->end() && !s->is_null()) {
      if (*s != "auto" && *s != "concise" && *s != "detailed") {
        return Status::InvalidArgument("'reasoning.summary' must be auto, concise or detailed",
                                       "reasoning.summary");
      }
      reasoning["summary"] = *s;
    }
  }
  if (auto it = j.find("max_output_tokens"); it != j.end()) chat["max_tokens"] = *it;
  OUTPOST_RETURN_IF_ERROR(Tools(j, &chat));
  OUTPOST_RETURN_IF_ERROR(ToolChoice(j, &chat));
  OUTPOST_RETURN_IF_ERROR(TextFormat(j, &chat));
  // Log-probabilities: top_logprobs, or include: ["message.output_text.logprobs"].
  bool logprobs = false;
  if (auto it = j.find("include"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) return WrongType("include", "an array of strings", *it);
    for (size_t i = 0; i < it->size(); ++i) {
      const json& v = (*it)[i];
      if (!v.is_string()) return WrongType("include[" + std::to_string(i) + "]", "a string", v);
      logprobs = logprobs || v == "message.output_text.logprobs";
    }
  }
  if (auto it = j.find("top_logprobs"); it != j.end() && !it->is_null()) {
    chat["top_logprobs"] = *it;
    logprobs = true;
  }
  if (logprobs) chat["logprobs"] = true;
  if (auto it = j.find("metadata"); it != j.end()) OUTPOST_RETURN_IF_ERROR(CheckMetadata(*it));
  bool truncate = false;
  if (auto it = j.find("truncation"); it != j.end() && !it->is_null()) {
    if (*it != "auto" && *it != "disabled") {
      return Status::InvalidArgument("'truncation' must be auto or disabled", "truncation");
    }
    truncate = *it == "auto";
  }

  auto parsed = ParseRequest(Endpoint::kChat, chat.dump(), INT32_MAX);
  if (!parsed.ok()) return ForResponses(parsed.status());
  ResponsesRequest out;
  out.chat = std::move(parsed).value();
  // The schema and the tools' parameters in the order the client wrote
  // them (the chat body above was built from sorted objects).
  auto& functions = out.chat.tools.functions;
  const bool schema = out.chat.response_format.type == engine::ResponseFormat::Type::kJsonSchema;
  if (schema || !functions.empty()) {
    nlohmann::ordered_json o;
    OUTPOST_ASSIGN_OR_RETURN(o, OrderedMembers(body, {"text", "tools"}));
    if (schema) out.chat.response_format.schema = o["text"]["format"]["schema"].dump();
    for (size_t i = 0; i < functions.size() && o.contains("tools"); ++i) {
      if (!functions[i].parameters.empty()) {
        functions[i].parameters = o["tools"][i]["parameters"].dump();
      }
    }
  }
  out.chat.endpoint = Endpoint::kResponses;
  out.store = store && options.previous != nullptr;
  out.previous_response_id = previous_id;
  out.conversation_id = conversation_id;
  out.truncate = truncate;
  util::Random& random = options.random != nullptr ? *options.random : util::RealRandom();
  out.input_items = ListedItems(input, random).dump();
  if (!previous_id.empty() || !conversation_id.empty() || referenced) {
    json expanded = j;
    expanded.erase("previous_response_id");
    expanded.erase("conversation");
    expanded["input"] = context;
    out.expanded_body = DumpLossy(expanded);
  }
  out.context = DumpLossy(context);

  auto value = [&](const char* key, json fallback) {
    auto it = j.find(key);
    return it == j.end() || it->is_null() ? fallback : *it;
  };
  json echo = {
      {"instructions", value("instructions", nullptr)},
      {"max_output_tokens", value("max_output_tokens", nullptr)},
      {"metadata", value("metadata", json::object())},
      {"parallel_tool_calls", value("parallel_tool_calls", true)},
      {"previous_response_id", previous_id.empty() ? json(nullptr) : json(previous_id)},
      {"reasoning", reasoning},
      {"store", store && options.previous != nullptr},
      {"temperature", value("temperature", 1.0)},
      {"text", {{"format", {{"type", "text"}}}}},
      {"tool_choice", value("tool_choice", "auto")},
      {"tools", value("tools", json::array())},
      {"top_logprobs", value("top_logprobs", 0)},
      {"top_p", value("top_p", 1.0)},
      {"truncation", value("truncation", "disabled")},
      {"user", value("user", nullptr)},
  };
  if (!conversation_id.empty()) echo["conversation"] = {{"id", conversation_id}};
  if (background) echo["background"] = true;
  out.background = background;
  if (auto it = j.find("text"); it != j.end() && it->is_object()) {
    echo["text"] = *it;
    if (!it->contains("format") || (*it)["format"].is_null()) {
      echo["text"]["format"] = {{"type", "text"}};
    }
  }
  out.echo = echo.dump();
  return out;
}

}  // namespace outpost::api

#include "outpost/api/responses_response.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include <string_view>
#include "outpost/api/json_fields.h"

#include "outpost/api/sse.h"

namespace outpost::api {
namespace {

using nlohmann::json;

json Logprobs(const std::vector<scheduler::TokenInfo>& tokens) {
  json out = json::array();
  for (const auto& t : tokens) {
    json top = json::array();
    for (const auto& [piece, lp] : t.top) {
      top.push_back({{"token", piece}, {"bytes", ByteArray(piece)}, {"logprob", lp}});
    }
    out.push_back({{"token", t.piece},
                   {"bytes", ByteArray(t.piece)},
                   {"logprob", t.logprob},
                   {"top_logprobs", top}});
  }
  return out;
}

json UsageJson(const scheduler::Usage& u) {
  return {{"input_tokens", u.prompt_tokens},
          {"input_tokens_details", {{"cached_tokens", u.cached_tokens}, {"cache_write_tokens", 0}}},
          {"output_tokens", u.completion_tokens},
          {"output_tokens_details", {{"reasoning_tokens", u.reasoning_tokens}}},
          {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

json TextPart(const std::string& text, const std::vector<scheduler::TokenInfo>& logprobs) {
  return {{"type", "output_text"},
          {"text", text},
          {"annotations", json::array()},
          {"logprobs", Logprobs(logprobs)}};
}

json MessageItem(const std::string& id, const char* status, json content) {
  return {{"type", "message"},
          {"id", id},
          {"status", status},
          {"role", "assistant"},
          {"content", std::move(content)}};
}

// A thinking model's reasoning, as OpenAI gives an open model's: its text as
// one reasoning_text part, and no summary (none is made).
json ReasoningItem(const std::string& id, const char* status, const std::string& text) {
  json content = json::array();
  if (!text.empty()) content.push_back({{"type", "reasoning_text"}, {"text", text}});
  return {{"type", "reasoning"},
          {"id", id},
          {"summary", json::array()},
          {"content", std::move(content)},
          {"status", status}};
}

json CallItem(const std::string& id, const std::string& call_id, const std::string& name,
              const std::string& arguments, const char* status) {
  return {{"type", "function_call"}, {"id", id},        {"call_id", call_id}, {"name", name},
          {"arguments", arguments},  {"status", status}};
}

// The Response object; `output` and `usage` (null while in progress) given.
json ResponseJson(const ResponseInfo& info, const char* status, json output, json usage) {
  json r = json::parse(info.echo, nullptr, false);
  if (!r.is_object()) r = json::object();
  r["id"] = info.id;
  r["object"] = "response";
  r["created_at"] = info.created_at;
  r["status"] = status;
  r["background"] = r.value("background", json()) == true;
  r["error"] = nullptr;
  r["incomplete_details"] = nullptr;
  r["model"] = info.model;
  r["output"] = std::move(output);
  r["service_tier"] = info.service_tier;
  r["usage"] = std::move(usage);
  // Only a completed response has a completion time.
  const bool completed = std::string_view(status) == "completed" && info.completed_at > 0;
  r["completed_at"] = completed ? json(info.completed_at) : json(nullptr);
  return r;
}

// OpenAI's codes for a failed response: a full queue is rate_limit_exceeded.
const char* ErrorCode(const Status& error) {
  return error.code() == StatusCode::kResourceExhausted ? "rate_limit_exceeded" : "server_error";
}

}  // namespace

std::string ResponseBody(const ResponseInfo& info, const Choice& answer,
                         const scheduler::Usage& usage, util::Random& random) {
  const bool cut = answer.finish == scheduler::FinishReason::kLength;
  const char* item_status = cut ? "incomplete" : "completed";
  json output = json::array();
  if (!answer.reasoning.empty()) {
    // Whole once the answer came after it; cut inside it, incomplete.
    const bool thought = !cut || !answer.text.empty() || !answer.tool_calls.empty();
    output.push_back(ReasoningItem(NewId("rs_", random), thought ? "completed" : "incomplete",
                                   answer.reasoning));
  }
  if (!answer.text.empty() || answer.tool_calls.empty()) {
    output.push_back(MessageItem(NewId("msg_", random), item_status,
                                 json::array({TextPart(answer.text, answer.logprobs)})));
  }
  for (const auto& c : answer.tool_calls) {
    output.push_back(CallItem(NewId("fc_", random), c.id, c.name, c.arguments, item_status));
  }
  json r =
      ResponseJson(info, cut ? "incomplete" : "completed", std::move(output), UsageJson(usage));
  if (cut) r["incomplete_details"] = {{"reason", "max_output_tokens"}};
  return DumpLossy(r);
}

std::string PendingResponseBody(const ResponseInfo& info, const char* status) {
  return DumpLossy(ResponseJson(info, status, json::array(), nullptr));
}

std::string ResponsesErrorEvent(const Status& error, int64_t sequence_number) {
  return DumpLossy({{"type", "error"},
                    {"code", ErrorCode(error)},
                    {"message", error.message()},
                    {"param", error.param().empty() ? json(nullptr) : json(error.param())},
                    {"sequence_number", sequence_number}});
}

ResponseFieldsPatch::ResponseFieldsPatch(std::string fields) : fields_(std::move(fields)) {}

std::string ResponseFieldsPatch::Body(const std::string& body) const {
  json r = json::parse(body, nullptr, false);
  const json fields = json::parse(fields_, nullptr, false);
  if (!r.is_object() || r.value("object", json()) != "response" || !fields.is_object()) {
    return body;
  }
  for (const auto& [k, v] : fields.items()) r[k] = v;
  return DumpLossy(r);
}

std::string ResponseFieldsPatch::Line(std::string_view line) const {
  // Only an event that carries a Response is rewritten: the lifecycle ones.
  if (line.rfind("data:", 0) != 0 || line.find("\"response\"") == std::string_view::npos) {
    return std::string(line);
  }
  const bool cr = !line.empty() && line.back() == '\r';
  json e = json::parse(line.substr(5, line.size() - 5 - (cr ? 1 : 0)), nullptr, false);
  const json fields = json::parse(fields_, nullptr, false);
  if (!e.is_object() || !e.contains("response") || !e["response"].is_object() ||
      !fields.is_object()) {
    return std::string(line);
  }
  for (const auto& [k, v] : fields.items()) e["response"][k] = v;
  return "data: " + DumpLossy(e) + (cr ? "\r" : "");
}

std::string ResponseFieldsPatch::Feed(std::string_view chunk) {
  std::string out;
  held_.append(chunk);
  size_t at = 0;
  for (size_t end; (end = held_.find('\n', at)) != std::string::npos; at = end + 1) {
    out += Line(std::string_view(held_).substr(at, end - at));
    out += '\n';
  }
  held_.erase(0, at);
  return out;
}

std::string ResponseFieldsPatch::Finish() {
  std::string out = held_.empty() ? std::string() : Line(held_);
  held_.clear();
  return out;
}

std::string FinalResponseOfStream(std::string_view sse) {
  std::string last;
  size_t at = 0;
  while (at < sse.size()) {
    size_t end = sse.find('\n', at);
    if (end == std::string_view::npos) end = sse.size();
    std::string_view line = sse.substr(at, end - at);
    at = end + 1;
    if (line.rfind("data:", 0) != 0) continue;
    if (line.find("response.completed") == std::string_view::npos &&
        line.find("response.incomplete") == std::string_view::npos) {
      continue;
    }
    const json e = json::parse(line.substr(5), nullptr, false);
    if (!e.is_object() || !e.contains("response") || !e["response"].is_object()) continue;
    const json type = e.value("type", json());
    if (type == "response.completed" || type == "response.incomplete") {
      last = DumpLossy(e["response"]);
    }
  }
  return last;
}

std::string FinalResponseReader::Feed(std::string_view data, bool ended) {
  if (overflow_) return "";
  std::string found;
  size_t at = 0;
  while (at < data.size()) {
    const size_t nl = data.find('\n', at);
    const size_t end = nl == std::string_view::npos ? data.size() : nl;
    line_.append(data.substr(at, end - at));
    at = end + 1;
    if (line_.size() > max_line_) {
      overflow_ = true;
      std::string().swap(line_);
      return "";
    }
    if (nl == std::string_view::npos) break;
    if (std::string r = FinalResponseOfStream(line_); !r.empty()) found = std::move(r);
    line_.clear();
  }
  if (ended && !line_.empty()) {
    if (std::string r = FinalResponseOfStream(line_); !r.empty()) found = std::move(r);
    line_.clear();
  }
  return found;
}

std::string ResponseEvents::Event(const char* type, json fields) {
  fields["type"] = type;
  fields["sequence_number"] = seq_++;
  return SseEvent(type, DumpLossy(fields));
}

std::string ResponseEvents::Lifecycle(const char* type, const char* status, const json& extra) {
  json output = json::array();
  for (const Item& item : items_) {
    output.push_back(ItemJson(item));
  }
  json r = ResponseJson(info_, status, std::move(output), nullptr);
  for (const auto& [k, v] : extra.items()) r[k] = v;
  const std::string_view t = type;
  if (t == "response.completed" || t == "response.incomplete") final_ = DumpLossy(r);
  return Event(type, {{"response", std::move(r)}});
}

json ResponseEvents::ItemJson(const Item& item) {
  switch (item.kind) {
    case Item::Kind::kCall:
      return CallItem(item.id, item.call_id, item.name, item.text, item.status);
    case Item::Kind::kReasoning:
      return ReasoningItem(item.id, item.status, item.text);
    case Item::Kind::kMessage:
      break;
  }
  return MessageItem(item.id, item.status, json::array({TextPart(item.text, item.logprobs)}));
}

std::string ResponseEvents::Start() {
  std::string out = Lifecycle("response.created", "in_progress", json::object());
  return out + Lifecycle("response.in_progress", "in_progress", json::object());
}

std::string ResponseEvents::Open(Item item) {
  const int64_t index = static_cast<int64_t>(items_.size());
  std::string out;
  if (item.kind == Item::Kind::kCall) {
    out = Event("response.output_item.added",
                {{"output_index", index},
                 {"item", CallItem(item.id, item.call_id, item.name, "", "in_progress")}});
  } else if (item.kind == Item::Kind::kReasoning) {
    out = Event("response.output_item.added",
                {{"output_index", index}, {"item", ReasoningItem(item.id, "in_progress", "")}});
  } else {
    out = Event(
        "response.output_item.added",
        {{"output_index", index}, {"item", MessageItem(item.id, "in_progress", json::array())}});
    out += Event("response.content_part.added", {{"item_id", item.id},
                                                 {"output_index", index},
                                                 {"content_index", 0},
                                                 {"part", TextPart("", {})}});
  }
  items_.push_back(std::move(item));
  return out;
}

std::string ResponseEvents::CloseOpen(const char* status) {
  if (items_.empty() || !items_.back().open()) return {};
  Item& item = items_.back();
  item.status = status;
  const int64_t index = static_cast<int64_t>(items_.size()) - 1;
  std::string out;
  if (item.kind == Item::Kind::kReasoning) {
    out = Event(
        "response.reasoning_text.done",
        {{"item_id", item.id}, {"output_index", index}, {"content_index", 0}, {"text", item.text}});
    out += Event("response.output_item.done", {{"output_index", index}, {"item", ItemJson(item)}});
    return out;
  }
  if (item.kind == Item::Kind::kCall) {
    out = Event("response.function_call_arguments.done",
                {{"item_id", item.id}, {"output_index", index}, {"arguments", item.text}});
    out += Event("response.output_item.done",
                 {{"output_index", index},
                  {"item", CallItem(item.id, item.call_id, item.name, item.text, status)}});
    return out;
  }
  const json part = TextPart(item.text, item.logprobs);
  out = Event("response.output_text.done", {{"item_id", item.id},
                                            {"output_index", index},
                                            {"content_index", 0},
                                            {"text", item.text},
                                            {"logprobs", Logprobs(item.logprobs)}});
  out +=
      Event("response.content_part.done",
            {{"item_id", item.id}, {"output_index", index}, {"content_index", 0}, {"part", part}});
  out +=
      Event("response.output_item.done",
            {{"output_index", index}, {"item", MessageItem(item.id, status, json::array({part}))}});
  return out;
}

std::string ResponseEvents::Delta(const Choice& delta) {
  std::string out;
  if (!delta.reasoning.empty()) {
    if (items_.empty() || !items_.back().open() || items_.back().kind != Item::Kind::kReasoning) {
      out += CloseOpen("completed");
      Item reasoning;
      reasoning.kind = Item::Kind::kReasoning;
      reasoning.id = NewId("rs_", *random_);
      out += Open(std::move(reasoning));
    }
    Item& item = items_.back();
    item.text += delta.reasoning;
    out += Event("response.reasoning_text.delta",
                 {{"item_id", item.id},
                  {"output_index", static_cast<int64_t>(items_.size()) - 1},
                  {"content_index", 0},
                  {"delta", delta.reasoning}});
  }
  if (!delta.text.empty()) {
    if (items_.empty() || !items_.back().open() || items_.back().kind != Item::Kind::kMessage) {
      out += CloseOpen("completed");
      Item message;
      message.id = NewId("msg_", *random_);
      out += Open(std::move(message));
    }
    Item& item = items_.back();
    item.text += delta.text;
    for (const auto& t : delta.logprobs) item.logprobs.push_back(t);
    out += Event("response.output_text.delta",
                 {{"item_id", item.id},
                  {"output_index", static_cast<int64_t>(items_.size()) - 1},
                  {"content_index", 0},
                  {"delta", delta.text},
                  {"logprobs", Logprobs(delta.logprobs)}});
  }
  for (const ToolCall& c : delta.tool_calls) {
    if (!c.id.empty()) {  // a new call
      out += CloseOpen("completed");
      Item call;
      call.kind = Item::Kind::kCall;
      call.id = NewId("fc_", *random_);
      call.call_id = c.id;
      call.name = c.name;
      out += Open(std::move(call));
    }
    if (items_.empty() || items_.back().kind != Item::Kind::kCall || c.arguments.empty()) continue;
    Item& item = items_.back();
    item.text += c.arguments;
    out += Event("response.function_call_arguments.delta",
                 {{"item_id", item.id},
                  {"output_index", static_cast<int64_t>(items_.size()) - 1},
                  {"delta", c.arguments}});
  }
  return out;
}

std::string ResponseEvents::Finish(scheduler::FinishReason finish, const scheduler::Usage& usage,
                                   int64_t completed_at) {
  info_.completed_at = completed_at;
  const bool cut = finish == scheduler::FinishReason::kLength;
  std::string out;
  const bool answered = std::any_of(items_.begin(), items_.end(),
                                    [](const Item& i) { return i.kind != Item::Kind::kReasoning; });
  if (!answered) {  // no text at all: still one (empty) message, as the body has
    out += CloseOpen(cut ? "incomplete" : "completed");  // the thinking, cut inside or whole
    Item message;
    message.id = NewId("msg_", *random_);
    out += Open(std::move(message));
  }
  out += CloseOpen(cut ? "incomplete" : "completed");
  json extra = {{"usage", UsageJson(usage)}};
  if (cut) extra["incomplete_details"] = {{"reason", "max_output_tokens"}};
  return out + Lifecycle(cut ? "response.incomplete" : "response.completed",
                         cut ? "incomplete" : "completed", extra);
}

std::string ResponseEvents::Fail(const Status& error) {
  std::string out = CloseOpen("incomplete");
  return out + Lifecycle("response.failed", "failed",
                         {{"error", {{"code", ErrorCode(error)}, {"message", error.message()}}}});
}

}  // namespace outpost::api

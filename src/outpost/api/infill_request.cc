#include "outpost/api/infill_request.h"

#include <nlohmann/json.hpp>

#include "outpost/api/json_fields.h"
#include "outpost/util/status_macros.h"

namespace outpost::api {
namespace {

using json = nlohmann::json;

// The fields /infill shares with /v1/completions under the same name and meaning.
constexpr const char* kSameFields[] = {
    "temperature",       "top_k", "top_p",  "min_p",        "seed",       "presence_penalty",
    "frequency_penalty", "stop",  "stream", "cache_prompt", "ignore_eos", "model"};

// An integer limit of llama-server's, 0 (none, also when absent or null)
// to `max`. Errors: InvalidArgument naming `field`.
StatusOr<int64_t> OptionalLimit(const json& body, const char* field, int64_t max) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return int64_t{0};
  if (!it->is_number_integer()) return WrongType(field, "an integer", *it);
  if (it->get<int64_t>() < 0 || it->get<int64_t>() > max) {
    return Status::InvalidArgument(std::string("'") + field +
                                       "' must be between 0 (no limit) and " + std::to_string(max) +
                                       ", got " + it->dump(),
                                   field);
  }
  return it->get<int64_t>();
}

StatusOr<std::string> RequiredText(const json& body, const char* field) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) {
    return Status::InvalidArgument(std::string("'") + field + "' is required", field);
  }
  if (!it->is_string()) return WrongType(field, "a string", *it);
  return it->get<std::string>();
}

Status ReadExtra(const json& body, std::vector<engine::InfillChunk>* out) {
  auto it = body.find("input_extra");
  if (it == body.end() || it->is_null()) return Status::Ok();
  if (!it->is_array()) {
    return WrongType("input_extra", "an array of {\"filename\": string, \"text\": string}", *it);
  }
  if (it->size() > kMaxInfillFiles) {
    return Status::InvalidArgument("'input_extra' may hold at most " +
                                       std::to_string(kMaxInfillFiles) + " files, got " +
                                       std::to_string(it->size()),
                                   "input_extra");
  }
  for (size_t i = 0; i < it->size(); ++i) {
    const json& chunk = (*it)[i];
    const std::string at = "input_extra[" + std::to_string(i) + "]";
    if (!chunk.is_object()) return WrongType(at, "an object", chunk);
    engine::InfillChunk c;
    auto text = chunk.find("text");
    if (text == chunk.end() || !text->is_string()) {
      return text == chunk.end()
                 ? Status::InvalidArgument("'" + at + ".text' is required", at + ".text")
                 : WrongType(at + ".text", "a string", *text);
    }
    c.text = text->get<std::string>();
    if (auto name = chunk.find("filename"); name != chunk.end() && !name->is_null()) {
      if (!name->is_string()) return WrongType(at + ".filename", "a string", *name);
      c.filename = name->get<std::string>();
    }
    out->push_back(std::move(c));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<InfillRequest> ParseInfillRequest(std::string_view body) {
  json j;
  OUTPOST_ASSIGN_OR_RETURN(j, ParseObjectBody(body));
  std::string prefix, suffix;
  OUTPOST_ASSIGN_OR_RETURN(prefix, RequiredText(j, "input_prefix"));
  OUTPOST_ASSIGN_OR_RETURN(suffix, RequiredText(j, "input_suffix"));
  std::string cursor;
  if (auto it = j.find("prompt"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) return WrongType("prompt", "a string", *it);
    cursor = it->get<std::string>();
  }
  std::vector<engine::InfillChunk> extra;
  OUTPOST_RETURN_IF_ERROR(ReadExtra(j, &extra));

  // The completion it means, checked by /v1/completions' rules. The prompt
  // there must not be empty; the text before the cursor here may be (the
  // cursor at a file's start), and is put back after.
  json oai = json::object();
  oai["prompt"] = prefix.empty() ? std::string(" ") : prefix;
  oai["suffix"] = suffix;
  for (const char* field : kSameFields) {
    if (auto it = j.find(field); it != j.end()) oai[field] = *it;
  }
  if (auto it = j.find("repeat_penalty"); it != j.end()) oai["repetition_penalty"] = *it;
  const auto limit = j.find("n_predict") != j.end() ? j.find("n_predict") : j.find("max_tokens");
  const bool n_predict = limit != j.end() && j.find("n_predict") != j.end();
  // -1 (llama-server's default): until the context is full.
  if (limit != j.end() && !(limit->is_number_integer() && limit->get<int64_t>() == -1)) {
    oai["max_tokens"] = *limit;
  }
  auto parsed = ParseRequest(Endpoint::kCompletion, oai.dump(), INT32_MAX);
  if (!parsed.ok()) return ForInfill(parsed.status(), n_predict ? "n_predict" : "max_tokens");

  InfillRequest out;
  out.request = std::move(parsed).value();
  out.request.prompt = std::move(prefix);
  out.request.infill->prompt = std::move(cursor);
  out.request.infill->extra = std::move(extra);
  if (!n_predict) out.limit_field = "max_tokens";
  OUTPOST_ASSIGN_OR_RETURN(out.max_predict_ms, OptionalLimit(j, "t_max_predict_ms", 3'600'000));
  int64_t n_indent = 0;
  OUTPOST_ASSIGN_OR_RETURN(n_indent, OptionalLimit(j, "n_indent", kMaxIndent));
  out.n_indent = static_cast<int32_t>(n_indent);
  if (auto it = j.find("response_fields"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) return WrongType("response_fields", "an array of strings", *it);
    for (size_t i = 0; i < it->size(); ++i) {
      if (!(*it)[i].is_string()) {
        return WrongType("response_fields[" + std::to_string(i) + "]", "a string", (*it)[i]);
      }
      out.response_fields.push_back((*it)[i].get<std::string>());
    }
  }
  return out;
}

Status ForInfill(const Status& st, const std::string& limit_field) {
  const std::pair<std::string, std::string> kNames[] = {
      {"max_tokens", limit_field},
      {"repetition_penalty", "repeat_penalty"},
      {"prompt", "input_prefix"},
      {"suffix", "input_suffix"},
  };
  for (const auto& [from, to] : kNames) {
    if (st.param() != from || from == to) continue;
    const bool identifier = from.find('_') != std::string::npos;
    const std::string find = identifier ? from : "'" + from + "'";
    const std::string put = identifier ? to : "'" + to + "'";
    std::string message = st.message();
    for (size_t at = message.find(find); at != std::string::npos;
         at = message.find(find, at + put.size())) {
      message.replace(at, find.size(), put);
    }
    Status renamed(st.code(), message);
    renamed.WithErrorCode(st.error_code());
    return renamed.WithParam(to);
  }
  return st;
}

json SelectResponseFields(const json& answer, const std::vector<std::string>& fields) {
  if (fields.empty()) return answer;
  json out = json::object();
  for (const std::string& path : fields) {
    const json* at = &answer;
    bool found = true;
    for (size_t start = 0; found;) {
      const size_t slash = path.find('/', start);
      const std::string key = path.substr(start, slash - start);
      const auto it = at->is_object() ? at->find(key) : at->end();
      found = at->is_object() && it != at->end();
      if (found) at = &*it;
      if (slash == std::string::npos) break;
      start = slash + 1;
    }
    if (found) out[path] = *at;
  }
  return out;
}

}  // namespace outpost::api

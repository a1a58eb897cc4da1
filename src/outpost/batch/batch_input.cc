#include "outpost/batch/batch_input.h"

#include <set>

#include <nlohmann/json.hpp>

#include "outpost/util/json_text.h"

namespace outpost::batch {
namespace {

using nlohmann::json;

constexpr size_t kMaxCustomId = 512;
constexpr size_t kOrderKeyBytes = 512;

// The part of a body that decides which prompt prefix it shares.
std::string OrderKey(const json& body) {
  for (const char* k : {"messages", "prompt", "input"}) {
    if (auto it = body.find(k); it != body.end()) return it->dump().substr(0, kOrderKeyBytes);
  }
  return {};
}

}  // namespace

ParsedInput ParseBatchInput(const std::string& content, const std::string& endpoint,
                            size_t max_lines) {
  ParsedInput out;
  std::set<std::string> ids;
  std::string model;
  bool model_seen = false;
  int64_t number = 0;
  auto fail = [&](std::string code, std::string message, std::string param = {}) {
    if (out.errors.size() < kMaxInputErrors) {
      out.errors.push_back({number, std::move(code), std::move(message), std::move(param)});
    }
  };
  size_t pos = 0;
  while (pos < content.size()) {
    size_t end = content.find('\n', pos);
    if (end == std::string::npos) end = content.size();
    std::string text = content.substr(pos, end - pos);
    pos = end + 1;
    ++number;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text.find_first_not_of(" \t") == std::string::npos) continue;
    if (out.lines.size() >= max_lines) {
      fail("too_many_requests",
           "the input file has more than " + std::to_string(max_lines) + " requests");
      break;
    }
    if (Status st = util::CheckJsonDepth(text, "line " + std::to_string(number)); !st.ok()) {
      fail("invalid_json_line", st.message());
      continue;
    }
    json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      fail("invalid_json_line", "line " + std::to_string(number) + " is not a JSON object");
      continue;
    }
    const auto id = j.find("custom_id");
    if (id == j.end() || !id->is_string() || id->get_ref<const std::string&>().empty()) {
      fail("missing_required_parameter", "custom_id must be a non-empty string", "custom_id");
      continue;
    }
    const std::string& custom_id = id->get_ref<const std::string&>();
    if (custom_id.size() > kMaxCustomId) {
      fail("invalid_value", "custom_id is longer than 512 bytes", "custom_id");
      continue;
    }
    if (!ids.insert(custom_id).second) {
      fail("duplicate_custom_id", "custom_id '" + custom_id + "' appears more than once",
           "custom_id");
      continue;
    }
    const auto method = j.find("method");
    if (method == j.end() || !method->is_string() || *method != "POST") {
      fail("invalid_value", "method must be \"POST\"", "method");
      continue;
    }
    const auto url = j.find("url");
    if (url == j.end() || !url->is_string() || *url != endpoint) {
      fail("invalid_url", "url must be the batch's endpoint \"" + endpoint + "\"", "url");
      continue;
    }
    const auto body = j.find("body");
    if (body == j.end() || !body->is_object()) {
      fail("missing_required_parameter", "body must be a JSON object", "body");
      continue;
    }
    if (const auto s = body->find("stream");
        s != body->end() && s->is_boolean() && s->get<bool>()) {
      fail("invalid_value", "body.stream must not be true: a batch line is answered whole",
           "body.stream");
      continue;
    }
    std::string line_model;
    if (const auto m = body->find("model"); m != body->end() && m->is_string()) {
      line_model = m->get<std::string>();
    }
    if (!model_seen) {
      model = line_model;
      model_seen = true;
    } else if (line_model != model) {
      fail("mismatched_model",
           "every line must name the same model: '" + line_model + "' differs from '" + model +
               "' on an earlier line",
           "body.model");
      continue;
    }
    out.lines.push_back({number - 1, custom_id, endpoint, body->dump(), OrderKey(*body)});
  }
  if (out.errors.empty() && out.lines.empty()) {
    number = 0;
    fail("empty_file", "the input file holds no requests");
  }
  out.model = model;
  return out;
}

std::string InputErrorsJson(const std::vector<InputError>& errors) {
  json data = json::array();
  for (const auto& e : errors) {
    data.push_back({{"code", e.code},
                    {"message", e.message},
                    {"param", e.param.empty() ? json(nullptr) : json(e.param)},
                    {"line", e.line > 0 ? json(e.line) : json(nullptr)}});
  }
  return json{{"object", "list"}, {"data", data}}.dump();
}

}  // namespace outpost::batch

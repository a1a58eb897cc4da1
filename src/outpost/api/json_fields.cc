#include "outpost/api/json_fields.h"

#include <algorithm>
#include <vector>

#include "outpost/api/http_message.h"
#include "outpost/util/json_text.h"
#include "outpost/util/status_macros.h"

namespace outpost::api {

using nlohmann::json;

StatusOr<json> ParseObjectBody(std::string_view body, const std::string& what) {
  OUTPOST_RETURN_IF_ERROR(util::CheckJsonDepth(body, what));
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::InvalidArgument(what + " is not valid JSON");
  if (!j.is_object()) return Status::InvalidArgument(what + " must be a JSON object");
  return j;
}

const char* JsonTypeName(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

StatusOr<nlohmann::ordered_json> OrderedMembers(std::string_view body,
                                                std::initializer_list<std::string_view> keys) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (std::string_view key : keys) {
    const auto text = util::JsonMemberText(body, key);
    if (!text) continue;
    // Counted before parsing: an ordered object scans for each key it adds.
    const util::JsonMembers n = util::CountJsonMembers(*text);
    if (n.most_in_one > kMaxOrderedMembers || n.total > kMaxOrderedMembersInAll) {
      return Status::InvalidArgument(
          "'" + std::string(key) + "' holds " +
              (n.most_in_one > kMaxOrderedMembers
                   ? "an object of " + std::to_string(n.most_in_one) + " members; at most " +
                         std::to_string(kMaxOrderedMembers)
                   : std::to_string(n.total) + " object members in all; at most " +
                         std::to_string(kMaxOrderedMembersInAll)),
          std::string(key));
    }
    auto value = nlohmann::ordered_json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (value.is_discarded()) {
      return Status::InvalidArgument("'" + std::string(key) + "' is not valid JSON",
                                     std::string(key));
    }
    out[std::string(key)] = std::move(value);
  }
  return out;
}

Status WrongType(const std::string& field, const char* want, const json& got) {
  return Status::InvalidArgument("'" + field + "' must be " + want + ", got " + JsonTypeName(got),
                                 field);
}

std::string DumpLossy(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json ByteArray(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

json ListJson(json data, bool has_more) {
  json j = {{"object", "list"}, {"data", data}, {"has_more", has_more}};
  j["first_id"] = data.empty() ? json(nullptr) : data.front()["id"];
  j["last_id"] = data.empty() ? json(nullptr) : data.back()["id"];
  return j;
}

StatusOr<json> ItemPage(json items, const std::string& query, const std::string& container) {
  auto limit = QueryLimit(query, 20, 100);
  if (!limit.ok()) return limit.status();
  const std::string order = QueryParam(query, "order").value_or("desc");
  if (order != "asc" && order != "desc") {
    return Status::InvalidArgument("order must be asc or desc, got '" + order + "'", "order");
  }
  if (!items.is_array()) items = json::array();
  if (order == "desc") std::reverse(items.begin(), items.end());
  size_t start = 0;
  if (const auto after = QueryParam(query, "after")) {
    auto it = std::find_if(items.begin(), items.end(),
                           [&](const json& item) { return item.value("id", json()) == *after; });
    if (it == items.end()) {
      return Status::NotFound("no item with id '" + *after + "' in '" + container + "'", "after");
    }
    start = static_cast<size_t>(it - items.begin()) + 1;
  }
  json page = json::array();
  for (size_t i = start; i < items.size() && page.size() < static_cast<size_t>(*limit); ++i) {
    page.push_back(std::move(items[i]));
  }
  const bool more = start + page.size() < items.size();
  return ListJson(std::move(page), more);
}

Status CheckMetadata(const nlohmann::json& m, const std::string& field) {
  if (m.is_null()) return Status::Ok();
  if (!m.is_object()) return WrongType(field, "an object of strings", m);
  if (m.size() > 16) {
    return Status::InvalidArgument(
        "'" + field + "' may hold at most 16 keys, got " + std::to_string(m.size()), field);
  }
  for (const auto& [k, v] : m.items()) {
    if (k.size() > 64) {
      return Status::InvalidArgument(
          "'" + field + "' keys are at most 64 characters, got " + std::to_string(k.size()), field);
    }
    if (!v.is_string()) return WrongType(field + "." + k, "a string", v);
    if (v.get_ref<const std::string&>().size() > 512) {
      return Status::InvalidArgument("'" + field + "." + k + "' is at most 512 characters, got " +
                                         std::to_string(v.get_ref<const std::string&>().size()),
                                     field + "." + k);
    }
  }
  return Status::Ok();
}

}  // namespace outpost::api

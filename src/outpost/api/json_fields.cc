#include "outpost/api/json_fields.h"

namespace outpost::api {

using nlohmann::json;

const char* JsonTypeName(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
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

}  // namespace outpost::api

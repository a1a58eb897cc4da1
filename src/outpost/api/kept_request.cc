#include "outpost/api/kept_request.h"

#include <string_view>

#include "outpost/api/api_keys.h"

namespace outpost::api {

nlohmann::json KeepHeaders(const HttpRequest& req, std::initializer_list<const char*> names) {
  nlohmann::json kept = nlohmann::json::object();
  for (const char* name : names) {
    if (!req.has_header(name)) continue;
    if (std::string_view(name) == "Authorization") {
      const std::string id = ApiKeyId(PresentedKey(req.header(name)));
      if (!id.empty()) kept[kKeptKeyIdHeader] = id;
      continue;
    }
    kept[name] = req.header(name);
  }
  return kept;
}

void RestoreHeaders(const nlohmann::json& kept, const KeyLookup& key_with_id, HttpRequest* req) {
  if (!kept.is_object()) return;
  for (const auto& [name, value] : kept.items()) {
    if (!value.is_string()) continue;
    if (name == kKeptKeyIdHeader) {
      const std::string key = key_with_id ? key_with_id(value.get<std::string>()) : "";
      if (!key.empty()) req->headers.emplace_back("Authorization", "Bearer " + key);
      continue;
    }
    req->headers.emplace_back(name, value.get<std::string>());
  }
}

}  // namespace outpost::api

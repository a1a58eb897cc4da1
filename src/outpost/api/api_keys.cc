#include "outpost/api/api_keys.h"

#include <fstream>

#include "outpost/util/sha256.h"

namespace outpost::api {
namespace {

// Equal in constant time for a given candidate length: every byte of the
// longer string is visited, the lengths are compared without a branch.
bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  const size_t n = a.size() > b.size() ? a.size() : b.size();
  unsigned diff = a.size() ^ b.size();
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

}  // namespace

ApiKeys::ApiKeys(std::vector<std::string> keys) {
  for (auto& k : keys) {
    if (!k.empty()) keys_.push_back(std::move(k));
  }
}

StatusOr<std::vector<std::string>> ApiKeys::ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return Status::NotFound("api_key_file '" + path + "' cannot be read", "api_key_file");
  }
  std::vector<std::string> keys;
  std::string line;
  while (std::getline(in, line)) {
    line = Trim(line);
    if (line.empty() || line[0] == '#') continue;
    keys.push_back(line);
  }
  if (keys.empty()) {
    return Status::InvalidArgument("api_key_file '" + path + "' holds no key", "api_key_file");
  }
  return keys;
}

Status ApiKeys::Check(std::string_view authorization) const {
  if (keys_.empty()) return Status::Ok();
  if (authorization.empty()) {
    return Status(StatusCode::kUnauthenticated,
                  "an API key is required: send the header 'Authorization: Bearer YOUR_KEY'");
  }
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.substr(0, kBearer.size()) != kBearer) {
    return Status(StatusCode::kUnauthenticated,
                  "the Authorization header must be 'Bearer YOUR_KEY'");
  }
  const std::string_view presented = authorization.substr(kBearer.size());
  bool match = false;
  for (const auto& k : keys_) match |= ConstantTimeEquals(presented, k);
  if (!match) return Status(StatusCode::kUnauthenticated, "the API key is not valid");
  return Status::Ok();
}

std::string ApiKeys::KeyWithId(const std::string& id) const {
  if (id.empty()) return "";
  for (const auto& k : keys_) {
    if (ApiKeyId(k) == id) return k;
  }
  return "";
}

std::string ApiKeyId(const std::string& key) {
  return key.empty() ? std::string() : util::Sha256Hex(key).substr(0, 12);
}

std::string PresentedKey(const std::string& authorization) {
  return authorization.rfind("Bearer ", 0) == 0 ? authorization.substr(7) : authorization;
}

}  // namespace outpost::api

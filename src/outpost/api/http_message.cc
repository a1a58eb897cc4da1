#include "outpost/api/http_message.h"

#include <strings.h>

#include <cstdlib>

namespace outpost::api {

bool HeaderNameEquals(const std::string& a, const std::string& b) {
  return a.size() == b.size() && ::strncasecmp(a.data(), b.data(), a.size()) == 0;
}

std::string PercentDecode(const std::string& s) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string HttpRequest::header(const std::string& name) const {
  for (const auto& [n, v] : headers) {
    if (HeaderNameEquals(n, name)) return v;
  }
  return "";
}

bool HttpRequest::has_header(const std::string& name) const {
  for (const auto& [n, v] : headers) {
    if (HeaderNameEquals(n, name)) return true;
  }
  return false;
}

void HttpResponse::set_header(const std::string& name, const std::string& value) {
  for (auto& [n, v] : headers) {
    if (HeaderNameEquals(n, name)) {
      v = value;
      return;
    }
  }
  headers.emplace_back(name, value);
}

std::string HttpResponse::header(const std::string& name) const {
  for (const auto& [n, v] : headers) {
    if (HeaderNameEquals(n, name)) return v;
  }
  return "";
}

std::optional<std::string> QueryParam(const std::string& query, const std::string& key) {
  size_t pos = 0;
  while (pos <= query.size()) {
    size_t amp = query.find('&', pos);
    if (amp == std::string::npos) amp = query.size();
    std::string item = query.substr(pos, amp - pos);
    pos = amp + 1;
    for (char& c : item) {
      if (c == '+') c = ' ';
    }
    const size_t eq = item.find('=');
    if (PercentDecode(item.substr(0, eq)) != key) continue;
    return eq == std::string::npos ? std::string() : PercentDecode(item.substr(eq + 1));
  }
  return std::nullopt;
}

StatusOr<int64_t> QueryLimit(const std::string& query, int64_t fallback, int64_t max) {
  const auto v = QueryParam(query, "limit");
  if (!v) return fallback;
  char* end = nullptr;
  const long long n = std::strtoll(v->c_str(), &end, 10);
  if (v->empty() || *end != '\0' || n < 1 || n > max) {
    return Status::InvalidArgument(
        "limit must be an integer from 1 to " + std::to_string(max) + ", got '" + *v + "'",
        "limit");
  }
  return static_cast<int64_t>(n);
}

}  // namespace outpost::api

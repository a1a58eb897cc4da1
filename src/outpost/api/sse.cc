#include "outpost/api/sse.h"

namespace outpost::api {

std::string SseData(std::string_view payload) {
  std::string out;
  out.reserve(payload.size() + 8);
  size_t start = 0;
  for (;;) {
    const size_t nl = payload.find('\n', start);
    out += "data: ";
    out.append(
        payload.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start));
    out += '\n';
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  out += '\n';
  return out;
}

std::string SseEvent(std::string_view name, std::string_view payload) {
  std::string out = "event: ";
  out.append(name);
  out += '\n';
  return out + SseData(payload);
}

}  // namespace outpost::api

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

std::vector<std::string> SseEventSplitter::Feed(std::string_view data) {
  std::vector<std::string> events;
  size_t at = 0;
  while (at < data.size()) {
    const size_t nl = data.find('\n', at);
    const size_t end = nl == std::string_view::npos ? data.size() : nl + 1;
    partial_.append(data.substr(at, end - at));
    at = end;
    if (nl == std::string_view::npos) break;
    const size_t n = partial_.size();
    const bool blank = (n >= 2 && partial_[n - 2] == '\n') ||
                       (n >= 3 && partial_[n - 2] == '\r' && partial_[n - 3] == '\n') ||
                       partial_ == "\n" || partial_ == "\r\n";
    if (!blank) continue;
    if (partial_.find_first_not_of("\r\n") != std::string::npos) {
      events.push_back(std::move(partial_));
    }
    partial_.clear();
  }
  return events;
}

std::string SseEventSplitter::Flush() {
  std::string last;
  if (partial_.find_first_not_of("\r\n") != std::string::npos) {
    const char* end = partial_.back() == '\n' ? "\n" : "\n\n";
    last = std::move(partial_) + end;
  }
  partial_.clear();
  return last;
}

}  // namespace outpost::api

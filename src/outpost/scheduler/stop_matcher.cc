#include "outpost/scheduler/stop_matcher.h"

#include <algorithm>

namespace outpost::scheduler {

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  stops_.erase(
      std::remove_if(stops_.begin(), stops_.end(), [](const std::string& s) { return s.empty(); }),
      stops_.end());
}

std::string StopMatcher::Feed(std::string_view piece) {
  if (stopped_) return {};
  held_.append(piece);
  if (stops_.empty()) return Flush();

  // Earliest complete stop string wins.
  size_t best = std::string::npos;
  for (const auto& s : stops_) {
    const size_t at = held_.find(s);
    if (at != std::string::npos && at < best) {
      best = at;
      matched_ = s;
    }
  }
  if (best != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, best);
    held_.clear();
    return out;
  }

  // Hold back the longest suffix of held_ that is a proper prefix of a stop.
  size_t keep = 0;
  for (const auto& s : stops_) {
    const size_t max_len = std::min(s.size() - 1, held_.size());
    for (size_t len = max_len; len > keep; --len) {
      if (held_.compare(held_.size() - len, len, s, 0, len) == 0) {
        keep = len;
        break;
      }
    }
  }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopMatcher::Flush() {
  std::string out;
  out.swap(held_);
  return out;
}

}  // namespace outpost::scheduler

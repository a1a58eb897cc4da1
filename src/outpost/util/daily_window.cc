#include "outpost/util/daily_window.h"

#include <cstdio>

namespace outpost::util {
namespace {

// "HH:MM" or "HH:MM:SS" → seconds since midnight; -1 when malformed.
int ParseTimeOfDay(const std::string& s) {
  int h = -1, m = -1, sec = 0;
  char extra = 0;
  const int n = std::sscanf(s.c_str(), "%d:%d:%d%c", &h, &m, &sec, &extra);
  if (n != 2 && n != 3) return -1;
  if (s.size() != (n == 2 ? 5u : 8u)) return -1;
  if (h < 0 || h > 23 || m < 0 || m > 59 || sec < 0 || sec > 59) return -1;
  return h * 3600 + m * 60 + sec;
}

}  // namespace

StatusOr<DailyWindow> DailyWindow::Parse(const std::string& text, const std::string& param) {
  DailyWindow w;
  if (text.empty()) return w;
  const size_t dash = text.find('-');
  const int start = dash == std::string::npos ? -1 : ParseTimeOfDay(text.substr(0, dash));
  const int end = dash == std::string::npos ? -1 : ParseTimeOfDay(text.substr(dash + 1));
  if (start < 0 || end < 0 || start == end) {
    return Status::InvalidArgument(
        "'" + param + "' must be a daily window HH:MM-HH:MM (local time, e.g. 22:00-06:00), got '" +
            text + "'",
        param);
  }
  w.start_s_ = start;
  w.end_s_ = end;
  w.text_ = text;
  return w;
}

int DailyWindow::SecondOfDay(std::time_t t) const {
  std::tm tm{};
  localtime_r(&t, &tm);
  return tm.tm_hour * 3600 + tm.tm_min * 60 + tm.tm_sec;
}

bool DailyWindow::Contains(std::time_t t) const {
  if (always_open()) return true;
  const int s = SecondOfDay(t);
  return start_s_ < end_s_ ? (s >= start_s_ && s < end_s_) : (s >= start_s_ || s < end_s_);
}

int64_t DailyWindow::SecondsUntilOpen(std::time_t t) const {
  if (Contains(t)) return 0;
  const int s = SecondOfDay(t);
  return s < start_s_ ? start_s_ - s : 86'400 - s + start_s_;
}

}  // namespace outpost::util

// DailyWindow — a time of day range, local time, for work that must wait
// for quiet hours (a model pull that must not fill a site's uplink during
// the working day). "22:00-06:00" wraps past midnight; "" is always open.
// Pure apart from reading the clock's local time zone; thread-safe.
#pragma once

#include <ctime>
#include <string>

#include "outpost/util/status.h"

namespace outpost::util {

class DailyWindow {
 public:
  DailyWindow() = default;  // always open

  // "HH:MM[:SS]-HH:MM[:SS]" (24-hour, local time; start and end differ).
  // Errors: InvalidArgument naming `param` and the expected form.
  static StatusOr<DailyWindow> Parse(const std::string& text, const std::string& param);

  bool always_open() const { return start_s_ < 0; }
  // True when `t` (seconds since the epoch) falls inside the window.
  bool Contains(std::time_t t) const;
  // Seconds from `t` until the window next opens (0 when open).
  int64_t SecondsUntilOpen(std::time_t t) const;
  const std::string& text() const { return text_; }

 private:
  int SecondOfDay(std::time_t t) const;
  int start_s_ = -1, end_s_ = -1;  // seconds since local midnight
  std::string text_;
};

}  // namespace outpost::util

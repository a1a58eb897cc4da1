#include "outpost/util/clock.h"

#include <ctime>

namespace outpost::util {
namespace {

class SteadyClock final : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }
  int64_t UnixSeconds() const override { return static_cast<int64_t>(std::time(nullptr)); }
  int64_t UnixMillis() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

}  // namespace

Clock& RealClock() {
  static SteadyClock clock;
  return clock;
}

}  // namespace outpost::util

// SimClock — a util::Clock that moves only when a test says so.
#pragma once

#include <mutex>

#include "outpost/util/clock.h"

namespace outpost::testing {

class SimClock final : public util::Clock {
 public:
  TimePoint Now() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return now_;
  }
  int64_t UnixSeconds() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return 1'700'000'000 +
           std::chrono::duration_cast<std::chrono::seconds>(now_.time_since_epoch()).count();
  }
  int64_t UnixMillis() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return 1'700'000'000'000 +
           std::chrono::duration_cast<std::chrono::milliseconds>(now_.time_since_epoch()).count();
  }
  void Advance(Duration d) {
    std::lock_guard<std::mutex> lock(mu_);
    now_ += d;
  }

 private:
  mutable std::mutex mu_;
  TimePoint now_{};  // starts at the epoch of the steady clock
};

}  // namespace outpost::testing

// Clock — the one source of time for code that schedules, expires or measures.
//
// Production code takes RealClock(); tests pass tests/mocks/sim_clock.h and
// move time by hand, so no test waits on (or asserts) the wall clock. Injected
// into the scheduler, the upstream cluster and the connection pools.
//
// Thread-safety: implementations are safe to call from any thread.
#pragma once

#include <chrono>
#include <cstdint>

namespace outpost::util {

class Clock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using Duration = std::chrono::steady_clock::duration;

  virtual ~Clock() = default;
  // Monotonic time, for deadlines and durations.
  virtual TimePoint Now() const = 0;
  // Seconds since the Unix epoch, for timestamps clients see ("created").
  virtual int64_t UnixSeconds() const = 0;
  // Milliseconds since the Unix epoch, for records that need finer stamps
  // (uplink summaries). By default UnixSeconds() * 1000.
  virtual int64_t UnixMillis() const { return UnixSeconds() * 1000; }
};

// The process's steady and system clocks. Stateless; lives for the process.
Clock& RealClock();

inline double Seconds(Clock::Duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace outpost::util

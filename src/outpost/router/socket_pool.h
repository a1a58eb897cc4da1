// SocketPool — idle keep-alive TCP sockets per upstream for the router's own
// HTTP/1.1 client (http1_client.h), reused LIFO, dropped when too old or when
// the peer closed them. Internally synchronised.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "outpost/util/clock.h"
#include "outpost/util/thread_annotations.h"

namespace outpost::router {

// Idle keep-alive sockets per upstream (by name), reused LIFO; dropped after
// `max_idle` or when the peer closed them.
class SocketPool {
 public:
  // `clock` (idle ages) must outlive the pool.
  explicit SocketPool(size_t max_idle_per_upstream = 64,
                      std::chrono::milliseconds max_idle = std::chrono::milliseconds(2000),
                      const util::Clock* clock = &util::RealClock());
  ~SocketPool();  // closes the idle sockets
  SocketPool(const SocketPool&) = delete;
  SocketPool& operator=(const SocketPool&) = delete;

  int TakeIdle(const std::string& key);  // a live idle socket, or -1
  void PutIdle(const std::string& key, int fd);
  uint64_t connections_opened() const { return opened_; }
  void CountOpened() { ++opened_; }

 private:
  struct Idle {
    int fd;
    util::Clock::TimePoint since;
  };
  const size_t max_idle_per_upstream_;
  const std::chrono::milliseconds max_idle_;
  const util::Clock* const clock_;
  std::mutex mu_;
  std::map<std::string, std::vector<Idle>> idle_ OUTPOST_GUARDED_BY(mu_);
  std::atomic<uint64_t> opened_{0};
};

// An idle HTTP/1.1 connection has nothing to read: a readable socket means
// the peer closed it (EOF) or sent something unsolicited — unusable either way.
bool IdleSocketAlive(int fd);

}  // namespace outpost::router

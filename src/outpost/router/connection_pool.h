// ConnectionPool — idle keep-alive connections to upstreams, reused across
// requests so that a relayed request costs no TCP (or TLS) handshake. One
// pool per router; any number of connections may be out at once, and up to
// `max_idle_per_upstream` wait idle per upstream. An idle connection is
// dropped after `max_idle` (below the usual 5 s server keep-alive timeout)
// or when the peer has closed it; a connection that breaks anyway is the
// caller's to retry once on a fresh one (see UpstreamCall). Internally
// synchronised.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "outpost/router/routing_config.h"
#include "outpost/util/clock.h"
#include "outpost/util/thread_annotations.h"

namespace httplib {
class Client;
}

namespace outpost::router {

class ConnectionPool {
 public:
  // `clock` (idle ages) must outlive the pool.
  explicit ConnectionPool(size_t max_idle_per_upstream = 64,
                          std::chrono::milliseconds max_idle = std::chrono::milliseconds(2000),
                          const util::Clock* clock = &util::RealClock());
  ~ConnectionPool();
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  struct Lease {
    std::unique_ptr<httplib::Client> client;
    bool reused = false;  // true: an idle connection that was open before
  };
  // An idle live connection to `cfg`'s upstream, or (always, when `fresh`) a
  // new client configured from `cfg` (timeouts, TLS, keep-alive,
  // TCP_NODELAY) that connects on first use.
  Lease Acquire(const UpstreamConfig& cfg, bool fresh = false);
  // Hands a client back after a request that ended cleanly (whole response
  // read). Clients whose connection is closed are dropped.
  void Release(const std::string& upstream, std::unique_ptr<httplib::Client> client);

  uint64_t connections_opened() const;  // new clients handed out, all upstreams

 private:
  struct Idle {
    std::unique_ptr<httplib::Client> client;
    util::Clock::TimePoint since;
  };
  const size_t max_idle_per_upstream_;
  const std::chrono::milliseconds max_idle_;
  const util::Clock* const clock_;
  mutable std::mutex mu_;
  std::map<std::string, std::vector<Idle>> idle_ OUTPOST_GUARDED_BY(mu_);  // LIFO: warmest on top
  uint64_t opened_ OUTPOST_GUARDED_BY(mu_) = 0;
};

}  // namespace outpost::router

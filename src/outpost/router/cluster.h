// Cluster — the upstream hosts and their health, in Envoy's terms:
//
//   active health check   a GET of health_check.path every interval; a host
//                         turns unhealthy after unhealthy_threshold failures
//                         and healthy again after healthy_threshold successes.
//   outlier detection     consecutive_failures failed requests eject the host
//                         for base_ejection_time x 2^(ejections-1), capped at
//                         max_ejection_time; when that passes it is tried again.
//   circuit breaker       at most max_requests concurrent requests per host.
//
// Health is a bitset that records the cause. Owned by the router; internally
// synchronised; one health-check thread per host, so a slow or unreachable
// upstream never delays another's checks. The clock and the probe are
// injected (defaults: util::RealClock() and an HTTP GET), so tests drive
// health checks and ejections on a simulated clock through RunDueChecks().
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "outpost/router/policy.h"
#include "outpost/router/routing_config.h"
#include "outpost/util/clock.h"
#include "outpost/util/thread_annotations.h"

namespace outpost::router {

enum HealthFlag : uint32_t {
  kFailedActiveHealthCheck = 1u << 0,
  kOutlierEjected = 1u << 1,
};

class Cluster {
 public:
  using TimePoint = util::Clock::TimePoint;
  using ProbeFn = std::function<bool(const UpstreamConfig&)>;  // true: healthy answer

  // `probe` answers one active health check (the router's: a GET of
  // health.path through its UpstreamClient); `clock` must outlive the cluster. The threads started
  // by Start() sleep on the steady clock; a simulated clock is for tests that call RunDueChecks().
  explicit Cluster(
      std::vector<UpstreamConfig> upstreams, const util::Clock* clock = &util::RealClock(),
      ProbeFn probe = [](const UpstreamConfig&) { return false; });
  ~Cluster();  // Stop()s

  void Start();  // starts the health-check threads
  void Stop();

  // Probes every host whose check is due at now() (no lock held while
  // probing) and applies the thresholds. Returns when the next check is due.
  TimePoint RunDueChecks();

  // Snapshot for the policy: available = no health flags and breaker closed.
  std::vector<UpstreamView> View() const;
  // The upstream with id `id` (its index in the config). REQUIRES: id < size().
  const UpstreamConfig& Config(UpstreamId id) const { return hosts_[static_cast<size_t>(id)].cfg; }
  size_t size() const { return hosts_.size(); }

  // Circuit breaker. TryAcquire fails when max_requests are in flight.
  bool TryAcquire(const std::string& name);
  void Release(const std::string& name);

  // Passive outlier detection from request outcomes.
  void ReportSuccess(const std::string& name);
  void ReportFailure(const std::string& name);

  // One host as /ready reports it.
  struct HostStatus {
    std::string name;
    UpstreamKind kind = UpstreamKind::kCentral;
    std::string url;                        // base_url + path_prefix
    std::vector<std::string> health_flags;  // "failed_active_health_check", "outlier_ejected"
    int32_t active_requests = 0;
    int32_t max_requests = 0;
    int32_t ejections = 0;
    bool healthy() const { return health_flags.empty(); }
  };
  std::vector<HostStatus> Status() const;

 private:
  struct Host {
    UpstreamConfig cfg;
    uint32_t health = kFailedActiveHealthCheck;  // unknown until the first check passes
    int32_t hc_ok = 0, hc_fail = 0;              // consecutive probe results
    int32_t request_failures = 0;                // consecutive
    int32_t ejections = 0;
    TimePoint ejected_until{};
    TimePoint next_check{};
    int32_t active = 0;
  };
  // Probes host i if its check is due at now(); returns its next due time.
  TimePoint CheckHost(size_t i);
  void Loop(size_t i);

  const util::Clock* const clock_;
  const ProbeFn probe_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  // Guarded by mu_, except each Host's cfg: const after construction, read freely.
  std::vector<Host> hosts_;
  bool stopping_ OUTPOST_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace outpost::router

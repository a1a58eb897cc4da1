// History — the last hour of the box, for the live dashboard: every interval
// (default 5 s) a sampler thread reads the stat registry and keeps one point:
// tokens/s, requests/s and errors/s over the interval, time-to-first-token
// p50/p95 over the interval (from the GenAI histogram's bucket deltas),
// sessions in use and their maximum, the queue, routes taken, the hottest
// sensor and the power drawn. A ring of one hour's points; older ones drop.
//
// It works on metric names only (gen_ai_server_*, outpost_*), so it depends on
// nothing above telemetry. Rates are from counter deltas: a scrape never
// resets anything.
//
// Thread-safety: Start/Stop from one thread; Json() from any.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "outpost/telemetry/stat_registry.h"
#include "outpost/util/clock.h"
#include "outpost/util/thread_annotations.h"

namespace outpost::telemetry {

struct HistoryPoint {
  int64_t t = 0;  // Unix seconds
  double tokens_per_s = 0;
  double requests_per_s = 0;
  double errors_per_s = 0;
  double ttft_p50_s = -1, ttft_p95_s = -1;  // -1: no first token in the interval
  double sessions_used = 0, sessions_max = 0, queued = 0;
  std::map<std::string, double> routes_per_s;  // local, peer:<name>, central:<name>, reject
  double hottest_c = -1;                       // -1: no temperature sensor
  double power_w = -1;                         // largest power reading (whole-board rails first)
};

// The quantile q of the observations between two snapshots of one histogram
// (cumulative buckets), interpolated linearly inside the bucket as Prometheus's
// histogram_quantile does; -1 when nothing was observed. Exposed for tests.
double QuantileOfDelta(const HistogramSnapshot& before, const HistogramSnapshot& after, double q);

class History {
 public:
  History(const StatRegistry* registry, int64_t interval_ms, const util::Clock* clock);
  ~History();  // Stop()s

  void Start();
  void Stop();
  // Takes one point now (the sampler thread calls it each interval; tests call
  // it directly).
  void SampleNow();

  // {"interval_s", "points": [...], "current": {"sensors": [...], totals}}
  nlohmann::json Json() const;

 private:
  struct Totals {
    double tokens = 0, requests = 0, errors = 0;
    HistogramSnapshot ttft;
    std::map<std::string, double> routes;
  };
  Totals Read(const std::vector<StatRegistry::FamilySnapshot>& snap, HistoryPoint* gauges) const;

  const StatRegistry* const registry_;
  const int64_t interval_ms_;
  const util::Clock* const clock_;
  size_t capacity_;

  mutable std::mutex mu_;
  std::deque<HistoryPoint> points_ OUTPOST_GUARDED_BY(mu_);
  Totals last_ OUTPOST_GUARDED_BY(mu_);
  util::Clock::TimePoint last_at_ OUTPOST_GUARDED_BY(mu_);
  bool primed_ OUTPOST_GUARDED_BY(mu_) = false;
  nlohmann::json sensors_ OUTPOST_GUARDED_BY(mu_) = nlohmann::json::array();

  std::mutex run_mu_;
  std::condition_variable run_cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace outpost::telemetry

// SummaryBuilder — what the uplink sends instead of raw data: one compact,
// cumulative summary of the box per window (default 60 s), and the events
// seen while sampling.
//
// A summary holds (JSON, "v": 1):
// - counters, cumulative since the process started (`process_start_ms`):
//   requests by endpoint and status, routes taken, finish and rejection
//   reasons, prompt/completion/cached tokens, energy, throttle events, uplink
//   bytes — a fixed list of families, low-cardinality labels only;
// - the three GenAI server histograms, cumulative;
// - gauges sampled every Sample() (about once a second) as min, max, mean
//   and last over the window: queue depth (its peak), sessions, temperatures,
//   power, decode speed, KV bytes, resident memory, models loaded;
// - the window itself: requests, errors, failure rate, tokens, energy and
//   energy per token, and the window's time-to-first-token and request
//   duration as bucket counts, from which quantiles are taken (requests of
//   the batch class left out: they are not what clients waited).
// No prompt or response text is ever part of it.
//
// Cumulative is what makes the uplink safe: a summary sent twice changes
// nothing at a Prometheus-like backend, and MergeSummaries() folds two
// summaries of one boot into one that keeps every total (the window part
// adds up; only the resolution in time is lost).
//
// Thread-safety: one thread (the uplink's collector) calls Sample/Close/
// TakeEvents.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "outpost/telemetry/stat_registry.h"
#include "outpost/util/clock.h"

namespace outpost::telemetry {

// Something that happened, sent as it happens (an OTLP log record).
struct UplinkEvent {
  std::string name;               // "outpost.hw.throttled", "outpost.model.activated", ...
  std::string severity = "INFO";  // INFO | WARN | ERROR
  int64_t time_ms = 0;
  std::map<std::string, std::string> attributes;
  nlohmann::json ToJson() const;
};

class SummaryBuilder {
 public:
  // `registry` and `clock` must outlive the builder.
  SummaryBuilder(const StatRegistry* registry, const util::Clock* clock);

  // Reads the registry: gauges into the window's min/max/mean, and events
  // (throttling, models loaded or unloaded).
  void Sample();
  // Closes the window (sampling once more) and starts the next one.
  nlohmann::json Close();
  // Events seen since the last call, oldest first.
  std::vector<UplinkEvent> TakeEvents();

  // A failure-rate spike: at least this share of at least `min_requests`
  // requests failed in one window.
  static constexpr double kSpikeRate = 0.2;
  static constexpr int kSpikeMinRequests = 5;

 private:
  struct GaugeWindow {
    double min = 0, max = 0, sum = 0, last = 0;
    int64_t n = 0;
  };
  const StatRegistry* const registry_;
  const util::Clock* const clock_;
  const int64_t process_start_ms_;
  int64_t start_ms_;
  std::map<std::string, GaugeWindow> gauges_;  // key: name + labels JSON
  std::map<std::string, nlohmann::json> gauge_ids_;
  // Cumulative figures the window's deltas come from.
  struct Totals {
    double requests = 0, errors = 0, tokens = 0, prompt = 0;
    std::map<std::string, double> energy;  // per meter (labels JSON)
    HistogramSnapshot ttft, duration;
  };
  static void Accumulate(const StatRegistry::FamilySnapshot& f, const Family::Series& s, Totals* t);
  Totals last_;                               // at the previous window's end
  std::map<std::string, double> last_count_;  // event counters as last seen, by name+labels
  std::map<std::string, bool> models_loaded_;
  bool spiking_ = false;
  std::vector<UplinkEvent> events_;
};

// Folds `older` into `newer` (both summaries of one boot, older first).
// Counters, histograms and the last gauge values come from `newer`; gauge
// min/max/mean and the window's counts combine; the window starts at
// `older`'s start. Malformed input: `newer` unchanged.
std::string MergeSummaries(const std::string& older, const std::string& newer);

// The q-quantile of a window's bucket counts ({"bounds", "counts"}), linear
// inside the bucket as histogram_quantile does; -1 when empty.
double WindowQuantile(const nlohmann::json& window_hist, double q);

}  // namespace outpost::telemetry

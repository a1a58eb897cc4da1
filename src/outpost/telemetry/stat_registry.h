// StatRegistry — every metric of the process, declared once, read as one
// snapshot by /metrics (prometheus_text.h) and later by the summary uplink.
//
// A module declares its stats in one X-macro table (see stats.h): name, help,
// type, label names. Registering the table creates the families here and
// hands the module a struct of references to its series, bound to the
// module's base labels (the model, later the version). Series live as long as
// the registry and never move; updating one is an atomic add or store (a short
// lock for histograms), cheap enough for the decode loop.
//
// Thread-safety: everything is internally synchronised.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "outpost/util/thread_annotations.h"

namespace outpost::telemetry {

enum class StatType { kCounter, kGauge, kHistogram };

using LabelValues = std::vector<std::string>;

struct StatDef {
  std::string name;  // Prometheus name: outpost_*_total, *_seconds, *_bytes
  std::string help;
  StatType type = StatType::kCounter;
  std::vector<std::string> label_names;
  std::vector<double> bounds;  // histogram bucket upper bounds, ascending
};

class Counter {
 public:
  void Add(uint64_t n = 1) { v_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

class Gauge {
 public:
  void Set(double v) { v_.store(v, std::memory_order_relaxed); }
  double value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> v_{0};
};

struct HistogramSnapshot {
  std::vector<double> bounds;
  std::vector<uint64_t> cumulative;  // one per bound, then +Inf
  double sum = 0;
  uint64_t count = 0;
};

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double v);
  HistogramSnapshot Snapshot() const;
  uint64_t count() const;

 private:
  mutable std::mutex mu_;
  const std::vector<double> bounds_;
  std::vector<uint64_t> counts_ OUTPOST_GUARDED_BY(mu_);  // per bucket, plus +Inf
  double sum_ OUTPOST_GUARDED_BY(mu_) = 0;
  uint64_t n_ OUTPOST_GUARDED_BY(mu_) = 0;
};

// One metric family: its definition and its series by label values.
class Family {
 public:
  explicit Family(StatDef def) : def_(std::move(def)) {}
  const StatDef& def() const { return def_; }
  // The series with these label values (created on first use).
  // REQUIRES: labels.size() == def().label_names.size() and the matching type.
  Counter& CounterWith(const LabelValues& labels);
  Gauge& GaugeWith(const LabelValues& labels);
  Histogram& HistogramWith(const LabelValues& labels);
  // A series whose value is computed when read (counts kept elsewhere, such
  // as a connection pool's, or a sensor). `fn` must stay callable while the
  // registry lives; a NaN leaves the series out of that snapshot.
  void ComputedWith(const LabelValues& labels, std::function<double()> fn);

  struct Series {
    LabelValues labels;
    double value = 0;        // counters and gauges
    HistogramSnapshot hist;  // histograms
  };
  std::vector<Series> Snapshot() const;

 private:
  struct Slot {
    std::unique_ptr<Counter> counter;
    std::unique_ptr<Gauge> gauge;
    std::unique_ptr<Histogram> histogram;
    std::function<double()> computed;
  };
  Slot& SlotFor(const LabelValues& labels) OUTPOST_REQUIRES(mu_);

  const StatDef def_;
  mutable std::mutex mu_;
  std::map<LabelValues, Slot> series_ OUTPOST_GUARDED_BY(mu_);
};

// A family bound to some leading label values (a module's base labels),
// taking the rest per use: requests.With({"/v1/completions", "200"}).
class CounterVec {
 public:
  CounterVec(Family* f, LabelValues base) : f_(f), base_(std::move(base)) {}
  Counter& With(const LabelValues& rest) const;

 private:
  Family* f_;
  LabelValues base_;
};

class StatRegistry {
 public:
  // The family named def.name, created on first registration. A second
  // registration must agree on type and labels (it adds series, e.g. for a
  // second model). Registration order is the order in snapshots.
  Family& Register(const StatDef& def);

  struct FamilySnapshot {
    StatDef def;
    std::vector<Family::Series> series;
  };
  std::vector<FamilySnapshot> Snapshot() const;

 private:
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Family>> families_ OUTPOST_GUARDED_BY(mu_);
};

// Bucket bounds for request latencies in seconds: 5 ms to 10 min, so that slow
// CPU boxes (minutes per long answer) still land in a finite bucket.
std::vector<double> LatencyBounds();
// Bounds for the gap between tokens: 1 ms to 5 s.
std::vector<double> TokenGapBounds();

}  // namespace outpost::telemetry

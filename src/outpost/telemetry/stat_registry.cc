#include "outpost/telemetry/stat_registry.h"

#include <cmath>

#include <cstdio>
#include <cstdlib>

namespace outpost::telemetry {

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double v) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += v;
  ++n_;
}

HistogramSnapshot Histogram::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  HistogramSnapshot s;
  s.bounds = bounds_;
  uint64_t cum = 0;
  for (uint64_t c : counts_) {
    cum += c;
    s.cumulative.push_back(cum);
  }
  s.sum = sum_;
  s.count = n_;
  return s;
}

uint64_t Histogram::count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return n_;
}

Family::Slot& Family::SlotFor(const LabelValues& labels) {
  if (labels.size() != def_.label_names.size()) {
    std::fprintf(stderr, "BUG: metric %s takes %zu labels, got %zu\n", def_.name.c_str(),
                 def_.label_names.size(), labels.size());
    std::abort();
  }
  return series_[labels];
}

Counter& Family::CounterWith(const LabelValues& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  Slot& s = SlotFor(labels);
  if (!s.counter) s.counter = std::make_unique<Counter>();
  return *s.counter;
}

Gauge& Family::GaugeWith(const LabelValues& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  Slot& s = SlotFor(labels);
  if (!s.gauge) s.gauge = std::make_unique<Gauge>();
  return *s.gauge;
}

Histogram& Family::HistogramWith(const LabelValues& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  Slot& s = SlotFor(labels);
  if (!s.histogram) s.histogram = std::make_unique<Histogram>(def_.bounds);
  return *s.histogram;
}

void Family::ComputedWith(const LabelValues& labels, std::function<double()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  SlotFor(labels).computed = std::move(fn);
}

std::vector<Family::Series> Family::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Series> out;
  out.reserve(series_.size());
  for (const auto& [labels, slot] : series_) {
    Series s;
    s.labels = labels;
    if (slot.counter) s.value = static_cast<double>(slot.counter->value());
    if (slot.gauge) s.value = slot.gauge->value();
    if (slot.computed) {
      s.value = slot.computed();
      if (std::isnan(s.value)) continue;  // not available now: left out, never a zero
    }
    if (slot.histogram) s.hist = slot.histogram->Snapshot();
    out.push_back(std::move(s));
  }
  return out;
}

Counter& CounterVec::With(const LabelValues& rest) const {
  LabelValues all = base_;
  all.insert(all.end(), rest.begin(), rest.end());
  return f_->CounterWith(all);
}

Family& StatRegistry::Register(const StatDef& def) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& f : families_) {
    if (f->def().name != def.name) continue;
    if (f->def().type != def.type || f->def().label_names != def.label_names) {
      std::fprintf(stderr, "BUG: metric %s registered twice with different shapes\n",
                   def.name.c_str());
      std::abort();
    }
    return *f;
  }
  families_.push_back(std::make_unique<Family>(def));
  return *families_.back();
}

std::vector<StatRegistry::FamilySnapshot> StatRegistry::Snapshot() const {
  std::vector<Family*> families;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& f : families_) families.push_back(f.get());
  }
  std::vector<FamilySnapshot> out;
  out.reserve(families.size());
  for (Family* f : families) out.push_back({f->def(), f->Snapshot()});
  return out;
}

std::vector<double> LatencyBounds() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600};
}

std::vector<double> TokenGapBounds() {
  return {0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.5, 5};
}

}  // namespace outpost::telemetry

#include "outpost/telemetry/history.h"

#include <algorithm>
#include <cmath>

namespace outpost::telemetry {
namespace {

constexpr int64_t kWindowMs = 3600 * 1000;  // one hour of points

// The value of label `name` in a series, or "" when the family has no such label.
const std::string& Label(const StatRegistry::FamilySnapshot& f, const Family::Series& s,
                         const std::string& name) {
  static const std::string kEmpty;
  for (size_t i = 0; i < f.def.label_names.size() && i < s.labels.size(); ++i) {
    if (f.def.label_names[i] == name) return s.labels[i];
  }
  return kEmpty;
}

void Merge(HistogramSnapshot* into, const HistogramSnapshot& h) {
  if (into->bounds.empty()) {
    *into = h;
    return;
  }
  if (into->bounds != h.bounds) return;  // same family: same bounds
  for (size_t i = 0; i < into->cumulative.size() && i < h.cumulative.size(); ++i)
    into->cumulative[i] += h.cumulative[i];
  into->sum += h.sum;
  into->count += h.count;
}

double Round(double v, double unit) {
  return std::round(v / unit) * unit;
}

// null for "no value" (negative), else the rounded number.
nlohmann::json OrNull(double v, double unit) {
  return v < 0 ? nlohmann::json() : nlohmann::json(Round(v, unit));
}

}  // namespace

double QuantileOfDelta(const HistogramSnapshot& before, const HistogramSnapshot& after, double q) {
  const size_t n = after.cumulative.size();
  if (n == 0 || after.bounds.size() + 1 != n) return -1;
  auto delta = [&](size_t i) {
    const uint64_t b = i < before.cumulative.size() ? before.cumulative[i] : 0;
    return after.cumulative[i] >= b ? static_cast<double>(after.cumulative[i] - b) : 0.0;
  };
  const double total = delta(n - 1);
  if (total <= 0) return -1;
  const double rank = q * total;
  double prev = 0;
  for (size_t i = 0; i < n; ++i) {
    const double cum = delta(i);
    if (cum >= rank && cum > prev) {
      if (i == after.bounds.size()) return after.bounds.back();  // the +Inf bucket
      const double lower = i == 0 ? 0 : after.bounds[i - 1];
      const double upper = after.bounds[i];
      return lower + (upper - lower) * (rank - prev) / (cum - prev);
    }
    prev = cum;
  }
  return after.bounds.empty() ? -1 : after.bounds.back();
}

History::History(const StatRegistry* registry, int64_t interval_ms, const util::Clock* clock)
    : registry_(registry),
      interval_ms_(std::max<int64_t>(interval_ms, 100)),
      clock_(clock),
      capacity_(static_cast<size_t>(std::max<int64_t>(kWindowMs / interval_ms_, 2))) {}

History::~History() {
  Stop();
}

void History::Start() {
  SampleNow();  // primes the counters: the first point comes one interval later
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(run_mu_);
    while (!run_cv_.wait_for(lock, std::chrono::milliseconds(interval_ms_),
                             [this] { return stop_; })) {
      lock.unlock();
      SampleNow();
      lock.lock();
    }
  });
}

void History::Stop() {
  {
    std::lock_guard<std::mutex> lock(run_mu_);
    stop_ = true;
  }
  run_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

History::Totals History::Read(const std::vector<StatRegistry::FamilySnapshot>& snap,
                              HistoryPoint* p) const {
  Totals t;
  for (const auto& f : snap) {
    const std::string& name = f.def.name;
    for (const auto& s : f.series) {
      if (name == "outpost_completion_tokens_total") {
        t.tokens += s.value;
      } else if (name == "gen_ai_server_request_duration_seconds") {
        t.requests += static_cast<double>(s.hist.count);
        const std::string& err = Label(f, s, "error_type");
        if (!err.empty() && err != "cancelled") t.errors += static_cast<double>(s.hist.count);
      } else if (name == "gen_ai_server_time_to_first_token_seconds") {
        // Users' waits: a batch's lines wait in the lowest class by design.
        if (Label(f, s, "openai_response_service_tier") != "batch") Merge(&t.ttft, s.hist);
      } else if (name == "outpost_route_decisions_total") {
        t.routes[Label(f, s, "route")] += s.value;
      } else if (name == "outpost_active_sequences") {
        p->sessions_used += s.value;
      } else if (name == "outpost_max_sessions") {
        p->sessions_max += s.value;
      } else if (name == "outpost_queue_depth") {
        p->queued += s.value;
      } else if (name == "outpost_hw_temperature_celsius") {
        p->hottest_c = std::max(p->hottest_c, s.value);
      } else if (name == "outpost_hw_power_watts") {
        p->power_w = std::max(p->power_w, s.value);
      }
    }
  }
  return t;
}

void History::SampleNow() {
  const auto snap = registry_->Snapshot();
  HistoryPoint p;
  Totals now = Read(snap, &p);
  nlohmann::json sensors = nlohmann::json::array();
  for (const auto& f : snap) {
    if (f.def.name != "outpost_hw_temperature_celsius" && f.def.name != "outpost_hw_power_watts")
      continue;
    for (const auto& s : f.series) {
      sensors.push_back({{"hw_id", Label(f, s, "hw_id")},
                         {"hw_type", Label(f, s, "hw_type")},
                         {"kind", f.def.name == "outpost_hw_power_watts" ? "power" : "temperature"},
                         {"value", Round(s.value, 0.1)}});
    }
  }
  const auto at = clock_->Now();
  p.t = clock_->UnixSeconds();
  std::lock_guard<std::mutex> lock(mu_);
  sensors_ = std::move(sensors);
  if (primed_) {
    const double dt = std::chrono::duration<double>(at - last_at_).count();
    if (dt > 0) {
      p.tokens_per_s = std::max(0.0, now.tokens - last_.tokens) / dt;
      p.requests_per_s = std::max(0.0, now.requests - last_.requests) / dt;
      p.errors_per_s = std::max(0.0, now.errors - last_.errors) / dt;
      for (const auto& [route, n] : now.routes) {
        const auto it = last_.routes.find(route);
        const double before = it == last_.routes.end() ? 0 : it->second;
        if (n > before) p.routes_per_s[route] = (n - before) / dt;
      }
    }
    p.ttft_p50_s = QuantileOfDelta(last_.ttft, now.ttft, 0.5);
    p.ttft_p95_s = QuantileOfDelta(last_.ttft, now.ttft, 0.95);
    points_.push_back(std::move(p));
    while (points_.size() > capacity_) points_.pop_front();
  }
  last_ = std::move(now);
  last_at_ = at;
  primed_ = true;
}

nlohmann::json History::Json() const {
  nlohmann::json points = nlohmann::json::array();
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& p : points_) {
    nlohmann::json routes = nlohmann::json::object();
    for (const auto& [r, v] : p.routes_per_s) routes[r] = Round(v, 0.001);
    points.push_back({{"t", p.t},
                      {"tokens_per_s", Round(p.tokens_per_s, 0.01)},
                      {"requests_per_s", Round(p.requests_per_s, 0.001)},
                      {"errors_per_s", Round(p.errors_per_s, 0.001)},
                      {"ttft_p50_s", OrNull(p.ttft_p50_s, 1e-4)},
                      {"ttft_p95_s", OrNull(p.ttft_p95_s, 1e-4)},
                      {"sessions_used", p.sessions_used},
                      {"sessions_max", p.sessions_max},
                      {"queued", p.queued},
                      {"routes_per_s", routes},
                      {"hottest_c", OrNull(p.hottest_c, 0.1)},
                      {"power_w", OrNull(p.power_w, 0.1)}});
  }
  return {{"interval_s", static_cast<double>(interval_ms_) / 1000.0},
          {"points", std::move(points)},
          {"current",
           {{"sensors", sensors_},
            {"tokens_total", last_.tokens},
            {"requests_total", last_.requests},
            {"errors_total", last_.errors},
            {"routes_total", last_.routes}}}};
}

}  // namespace outpost::telemetry

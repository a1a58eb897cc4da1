// Metrics — the process's Prometheus metrics, declared once here.
//
// One instance, owned by the app and shared by reference with api/ and
// scheduler/. Every method is internally synchronised (atomics and one mutex
// for the labelled series) and cheap enough for the decode loop.
// Render() produces Prometheus text exposition format 0.0.4.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace outpost::telemetry {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double v);
  // Appends "<name>_bucket{le=..} n" ..., _sum and _count lines.
  void Render(const std::string& name, std::string* out) const;
  uint64_t count() const;

 private:
  mutable std::mutex mu_;
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // one per bound, plus +Inf
  double sum_ = 0;
  uint64_t n_ = 0;
};

class Metrics {
 public:
  Metrics();

  // Requests by endpoint ("/v1/chat/completions") and HTTP status.
  void CountRequest(const std::string& endpoint, int status);
  uint64_t RequestCount(const std::string& endpoint, int status) const;

  std::atomic<uint64_t> prompt_tokens_total{0};
  std::atomic<uint64_t> completion_tokens_total{0};
  std::atomic<uint64_t> rejected_total{0};  // 503 over capacity

  Histogram time_to_first_token_seconds;
  Histogram inter_token_latency_seconds;
  Histogram request_duration_seconds;

  // Gauges, set by the scheduler every step.
  std::atomic<int64_t> queue_depth{0};
  std::atomic<int64_t> active_sequences{0};
  std::atomic<int64_t> max_sessions{0};
  std::atomic<uint64_t> kv_bytes_used{0};
  std::atomic<uint64_t> kv_bytes_limit{0};
  std::atomic<uint64_t> memory_budget_bytes{0};
  std::atomic<uint64_t> memory_planned_peak_bytes{0};
  std::atomic<uint64_t> weight_bytes{0};
  std::atomic<double> decode_tokens_per_second{0};

  // Routing decisions by route ("local", "peer:a", "central:c", "reject") and reason.
  void CountRoute(const std::string& route, const std::string& reason);
  uint64_t RouteCount(const std::string& route, const std::string& reason) const;
  std::atomic<uint64_t> proxied_prompt_tokens_total{0};
  std::atomic<uint64_t> proxied_completion_tokens_total{0};
  // TCP connections opened to upstreams (all pools); synced from the router's
  // pools when /metrics is served. Far below the relayed requests = pooling works.
  std::atomic<uint64_t> upstream_connections_opened_total{0};

  std::string Render() const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::map<std::pair<std::string, std::string>, uint64_t> routes_;
};

}  // namespace outpost::telemetry

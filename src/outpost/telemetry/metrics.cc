#include "outpost/telemetry/metrics.h"

#include <cstdio>

namespace outpost::telemetry {
namespace {

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

void Header(std::string* out, const char* name, const char* type, const char* help) {
  *out += "# HELP ";
  *out += name;
  *out += ' ';
  *out += help;
  *out += "\n# TYPE ";
  *out += name;
  *out += ' ';
  *out += type;
  *out += '\n';
}

template <typename T>
void Scalar(std::string* out, const char* name, const char* type, const char* help, T v) {
  Header(out, name, type, help);
  *out += name;
  *out += ' ';
  *out += Num(static_cast<double>(v));
  *out += '\n';
}

std::vector<double> LatencyBounds() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

}  // namespace

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

uint64_t Histogram::count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return n_;
}

void Histogram::Render(const std::string& name, std::string* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t cum = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    *out += name + "_bucket{le=\"" + Num(bounds_[i]) + "\"} " + std::to_string(cum) + "\n";
  }
  cum += counts_.back();
  *out += name + "_bucket{le=\"+Inf\"} " + std::to_string(cum) + "\n";
  *out += name + "_sum " + Num(sum_) + "\n";
  *out += name + "_count " + std::to_string(n_) + "\n";
}

Metrics::Metrics()
    : time_to_first_token_seconds(LatencyBounds()),
      inter_token_latency_seconds(
          {0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28}),
      request_duration_seconds(LatencyBounds()) {}

void Metrics::CountRequest(const std::string& endpoint, int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[{endpoint, status}];
}

uint64_t Metrics::RequestCount(const std::string& endpoint, int status) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = requests_.find({endpoint, status});
  return it == requests_.end() ? 0 : it->second;
}

void Metrics::CountRoute(const std::string& route, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  ++routes_[{route, reason}];
}

uint64_t Metrics::RouteCount(const std::string& route, const std::string& reason) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = routes_.find({route, reason});
  return it == routes_.end() ? 0 : it->second;
}

std::string Metrics::Render() const {
  std::string out;
  Header(&out, "outpost_route_decisions_total", "counter",
         "Routing decisions by route and reason.");
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, n] : routes_) {
      out += "outpost_route_decisions_total{route=\"" + key.first + "\",reason=\"" + key.second +
             "\"} " + std::to_string(n) + "\n";
    }
  }
  Scalar(&out, "outpost_proxied_prompt_tokens_total", "counter",
         "Prompt tokens of requests answered upstream.", proxied_prompt_tokens_total.load());
  Scalar(&out, "outpost_proxied_completion_tokens_total", "counter",
         "Completion tokens of requests answered upstream.",
         proxied_completion_tokens_total.load());
  Scalar(&out, "outpost_upstream_connections_opened_total", "counter",
         "TCP connections opened to upstreams (relayed requests reuse pooled ones).",
         upstream_connections_opened_total.load());
  Header(&out, "outpost_requests_total", "counter", "HTTP requests by endpoint and status code.");
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, n] : requests_) {
      out += "outpost_requests_total{endpoint=\"" + key.first + "\",status=\"" +
             std::to_string(key.second) + "\"} " + std::to_string(n) + "\n";
    }
  }
  Scalar(&out, "outpost_prompt_tokens_total", "counter", "Prompt tokens processed.",
         prompt_tokens_total.load());
  Scalar(&out, "outpost_completion_tokens_total", "counter", "Completion tokens generated.",
         completion_tokens_total.load());
  Scalar(&out, "outpost_rejected_total", "counter",
         "Requests rejected with 503 because queue or wait limits were exceeded.",
         rejected_total.load());
  Header(&out, "outpost_time_to_first_token_seconds", "histogram",
         "Time from request arrival to its first generated token.");
  time_to_first_token_seconds.Render("outpost_time_to_first_token_seconds", &out);
  Header(&out, "outpost_inter_token_latency_seconds", "histogram",
         "Time between consecutive generated tokens of one request.");
  inter_token_latency_seconds.Render("outpost_inter_token_latency_seconds", &out);
  Header(&out, "outpost_request_duration_seconds", "histogram",
         "Time from request arrival to its last token.");
  request_duration_seconds.Render("outpost_request_duration_seconds", &out);
  Scalar(&out, "outpost_queue_depth", "gauge", "Requests waiting for a session.",
         queue_depth.load());
  Scalar(&out, "outpost_active_sequences", "gauge", "Sequences being prefilled or decoded.",
         active_sequences.load());
  Scalar(&out, "outpost_max_sessions", "gauge", "Concurrent sessions admitted (parallel).",
         max_sessions.load());
  Scalar(&out, "outpost_kv_bytes_used", "gauge", "KV cache bytes holding live tokens.",
         kv_bytes_used.load());
  Scalar(&out, "outpost_kv_bytes_limit", "gauge", "KV cache bytes allocated for all sessions.",
         kv_bytes_limit.load());
  Scalar(&out, "outpost_memory_budget_bytes", "gauge", "Memory budget the capacity plan uses.",
         memory_budget_bytes.load());
  Scalar(&out, "outpost_memory_planned_peak_bytes", "gauge",
         "Planned peak memory: weights + overhead + KV at max sessions.",
         memory_planned_peak_bytes.load());
  Scalar(&out, "outpost_model_weight_bytes", "gauge", "Bytes of model weights.",
         weight_bytes.load());
  Scalar(&out, "outpost_decode_tokens_per_second", "gauge",
         "Aggregate decode rate over the last seconds of work.", decode_tokens_per_second.load());
  return out;
}

}  // namespace outpost::telemetry

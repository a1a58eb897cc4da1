#include "outpost/telemetry/otlp_json.h"

#include <ctime>
#include <map>

#include <nlohmann/json.hpp>

#include "outpost/telemetry/summary.h"

namespace outpost::telemetry {
namespace {

using nlohmann::json;

std::string Nanos(int64_t ms) {
  return std::to_string(ms) + "000000";
}

json Str(const std::string& k, const std::string& v) {
  return {{"key", k}, {"value", {{"stringValue", v}}}};
}
json Int(const std::string& k, int64_t v) {
  return {{"key", k}, {"value", {{"intValue", std::to_string(v)}}}};
}
json Bool(const std::string& k, bool v) {
  return {{"key", k}, {"value", {{"boolValue", v}}}};
}

// Prometheus-style label names to OpenTelemetry attribute names.
std::string AttrName(const std::string& label) {
  static const std::map<std::string, std::string> names = {
      {"gen_ai_operation_name", "gen_ai.operation.name"},
      {"gen_ai_provider_name", "gen_ai.provider.name"},
      {"gen_ai_request_model", "gen_ai.request.model"},
      {"error_type", "error.type"},
      {"openai_response_service_tier", "openai.response.service_tier"},
  };
  const auto it = names.find(label);
  return it == names.end() ? label : it->second;
}

// An empty label is no label (as in Prometheus' text): a successful
// request's error_type is left out, as OpenTelemetry sets error.type only on
// errors.
json Attrs(const json& labels) {
  json out = json::array();
  if (!labels.is_object()) return out;
  for (const auto& [k, v] : labels.items()) {
    if (v.is_string() && v.get<std::string>().empty()) continue;
    out.push_back(Str(AttrName(k), v.is_string() ? v.get<std::string>() : v.dump()));
  }
  return out;
}

struct MetricName {
  std::string name;
  std::string unit;
};

MetricName NameOf(const std::string& prom) {
  static const std::map<std::string, MetricName> otel = {
      {"gen_ai_server_time_to_first_token_seconds", {"gen_ai.server.time_to_first_token", "s"}},
      {"gen_ai_server_time_per_output_token_seconds", {"gen_ai.server.time_per_output_token", "s"}},
      {"gen_ai_server_request_duration_seconds", {"gen_ai.server.request.duration", "s"}},
  };
  const auto it = otel.find(prom);
  if (it != otel.end()) return it->second;
  std::string unit = "1";
  auto ends = [&](const char* suffix) {
    const std::string s(suffix);
    return prom.size() > s.size() && prom.compare(prom.size() - s.size(), s.size(), s) == 0;
  };
  if (ends("_joules_total")) unit = "J";
  if (ends("_tokens_total")) unit = "{token}";
  if (ends("_bytes") || ends("_bytes_total")) unit = "By";
  if (ends("_celsius")) unit = "Cel";
  if (ends("_watts")) unit = "W";
  if (ends("_seconds")) unit = "s";
  return {prom, unit};
}

json Resource(const SpoolRecord& r, const UplinkIdentity& id, const SendContext& ctx) {
  json attrs =
      json::array({Str("service.name", "outpost"), Str("service.version", id.version),
                   Str("service.instance.id", id.box_id), Str("host.name", id.host_name),
                   Str("outpost.box.id", id.box_id), Str("outpost.boot.id", r.boot_id),
                   Int("outpost.record.seq", r.seq), Int("outpost.record.first_seq", r.first_seq),
                   Str("outpost.record.kind", r.kind), Bool("outpost.uplink.present", ctx.present),
                   Int("outpost.uplink.backlog", ctx.backlog)});
  return {{"attributes", std::move(attrs)}};
}

json Scope(const UplinkIdentity& id) {
  return {{"name", "outpost"}, {"version", id.version}};
}

json Metrics(const json& s) {
  const int64_t start = s.value("process_start_ms", int64_t{0});
  const int64_t end = s.value("end_ms", int64_t{0});
  const int64_t wstart = s.value("start_ms", end);
  // Series of one family go into one metric.
  std::map<std::string, json> sums, hists, gauges;
  std::vector<std::string> order;
  for (const auto& c : s["counters"]) {
    const std::string name = c["name"];
    sums[name].push_back({{"attributes", Attrs(c["labels"])},
                          {"startTimeUnixNano", Nanos(start)},
                          {"timeUnixNano", Nanos(end)},
                          {"asDouble", c["value"]}});
  }
  for (const auto& h : s["histograms"]) {
    const std::string name = h["name"];
    json buckets = json::array();
    uint64_t prev = 0;
    for (const auto& c : h["cumulative"]) {
      const uint64_t v = c.get<uint64_t>();
      buckets.push_back(std::to_string(v >= prev ? v - prev : 0));
      prev = v;
    }
    hists[name].push_back({{"attributes", Attrs(h["labels"])},
                           {"startTimeUnixNano", Nanos(start)},
                           {"timeUnixNano", Nanos(end)},
                           {"count", std::to_string(h["count"].get<uint64_t>())},
                           {"sum", h["sum"]},
                           {"bucketCounts", std::move(buckets)},
                           {"explicitBounds", h["bounds"]}});
  }
  for (const auto& g : s["gauges"]) {
    const std::string name = g["name"];
    for (const char* stat : {"last", "min", "max", "mean"}) {
      json attrs = Attrs(g["labels"]);
      attrs.push_back(Str("outpost.window.stat", stat));
      gauges[name].push_back({{"attributes", std::move(attrs)},
                              {"startTimeUnixNano", Nanos(wstart)},
                              {"timeUnixNano", Nanos(end)},
                              {"asDouble", g[stat]}});
    }
  }
  json metrics = json::array();
  for (auto& [name, points] : sums) {
    const MetricName m = NameOf(name);
    metrics.push_back({{"name", m.name},
                       {"unit", m.unit},
                       {"sum",
                        {{"dataPoints", std::move(points)},
                         {"aggregationTemporality", 2},
                         {"isMonotonic", true}}}});
  }
  for (auto& [name, points] : hists) {
    const MetricName m = NameOf(name);
    metrics.push_back(
        {{"name", m.name},
         {"unit", m.unit},
         {"histogram", {{"dataPoints", std::move(points)}, {"aggregationTemporality", 2}}}});
  }
  for (auto& [name, points] : gauges) {
    const MetricName m = NameOf(name);
    metrics.push_back(
        {{"name", m.name}, {"unit", m.unit}, {"gauge", {{"dataPoints", std::move(points)}}}});
  }
  // The window: scalars as gauges over [start, end], latencies as summaries.
  const json& w = s["window"];
  auto window_gauge = [&](const char* key, const char* name, const char* unit) {
    if (!w.contains(key)) return;
    metrics.push_back({{"name", name},
                       {"unit", unit},
                       {"gauge",
                        {{"dataPoints", json::array({{{"startTimeUnixNano", Nanos(wstart)},
                                                      {"timeUnixNano", Nanos(end)},
                                                      {"asDouble", w[key]}}})}}}});
  };
  window_gauge("requests", "outpost.window.requests", "{request}");
  window_gauge("errors", "outpost.window.errors", "{request}");
  window_gauge("failure_rate", "outpost.window.failure_rate", "1");
  window_gauge("completion_tokens", "outpost.window.completion_tokens", "{token}");
  window_gauge("prompt_tokens", "outpost.window.prompt_tokens", "{token}");
  window_gauge("energy_j", "outpost.window.energy", "J");
  window_gauge("energy_per_token_j", "outpost.window.energy_per_token", "J/{token}");
  for (const auto& [key, name] :
       {std::pair<const char*, const char*>{"ttft", "outpost.window.time_to_first_token"},
        {"duration", "outpost.window.request_duration"}}) {
    if (!w.contains(key)) continue;
    const json& h = w[key];
    uint64_t count = 0;
    for (const auto& c : h.value("counts", json::array())) count += c.get<uint64_t>();
    json qs = json::array();
    for (double q : {0.5, 0.95, 0.99}) {
      const double v = WindowQuantile(h, q);
      if (v >= 0) qs.push_back({{"quantile", q}, {"value", v}});
    }
    metrics.push_back({{"name", name},
                       {"unit", "s"},
                       {"summary",
                        {{"dataPoints", json::array({{{"startTimeUnixNano", Nanos(wstart)},
                                                      {"timeUnixNano", Nanos(end)},
                                                      {"count", std::to_string(count)},
                                                      {"sum", h.value("sum", 0.0)},
                                                      {"quantileValues", std::move(qs)}}})}}}});
  }
  return metrics;
}

int SeverityNumber(const std::string& s) {
  if (s == "ERROR") return 17;
  if (s == "WARN") return 13;
  if (s == "DEBUG") return 5;
  return 9;  // INFO
}

std::string IsoTime(int64_t ms) {
  const time_t t = static_cast<time_t>(ms / 1000);
  tm utc{};
  gmtime_r(&t, &utc);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

// An event or a gap as one log record.
json LogRecord(const SpoolRecord& r) {
  const json b = json::parse(r.body, nullptr, false);
  std::string name, severity = "INFO", message;
  json attrs = json::array();
  if (r.kind == "gap") {
    name = "outpost.uplink.gap";
    severity = "WARN";
    const int64_t n = b.value("records", int64_t{0});
    message = "uplink gap (" + b.value("reason", std::string("unknown")) +
              "): " + std::to_string(n) + " record(s) lost";
    if (b.contains("from_seq")) {
      message += ", seq " + std::to_string(b.value("from_seq", int64_t{0})) + "-" +
                 std::to_string(b.value("to_seq", int64_t{0})) + ", " +
                 IsoTime(b.value("from_ms", int64_t{0})) + " to " +
                 IsoTime(b.value("to_ms", int64_t{0}));
    }
    if (b.contains("unrecorded")) {
      message +=
          "; " + std::to_string(b.value("unrecorded", int64_t{0})) + " never written (disk full)";
    }
    for (const auto& [k, v] : b.items()) {
      if (v.is_number_integer()) {
        attrs.push_back(Int("outpost.gap." + k, v.get<int64_t>()));
      } else if (v.is_string()) {
        attrs.push_back(Str("outpost.gap." + k, v.get<std::string>()));
      } else if (v.is_object()) {
        for (const auto& [k2, v2] : v.items()) {
          if (v2.is_number_integer()) attrs.push_back(Int("outpost.gap." + k + "." + k2, v2));
        }
      }
    }
  } else {
    name = b.value("name", std::string("outpost.event"));
    severity = b.value("severity", std::string("INFO"));
    message = name;
    if (b.contains("attributes") && b["attributes"].is_object()) {
      for (const auto& [k, v] : b["attributes"].items()) {
        const std::string val = v.is_string() ? v.get<std::string>() : v.dump();
        // Long values (a content event's messages) stay in their attribute
        // only: the body is the one-line summary.
        if (val.size() <= 200) message += " " + k + "=" + val;
        attrs.push_back(Str(k, val));
      }
    }
  }
  attrs.push_back(Str("event.name", name));
  return {{"timeUnixNano", Nanos(r.time_ms)},
          {"observedTimeUnixNano", Nanos(r.time_ms)},
          {"severityNumber", SeverityNumber(severity)},
          {"severityText", severity},
          {"eventName", name},
          {"body", {{"stringValue", message}}},
          {"attributes", std::move(attrs)}};
}

}  // namespace

const char* OtlpPath(const SpoolRecord& r) {
  return r.kind == "summary" ? "/v1/metrics" : "/v1/logs";
}

std::string OtlpBody(const SpoolRecord& r, const UplinkIdentity& id, const SendContext& ctx) {
  if (r.kind == "summary") {
    const json s = json::parse(r.body, nullptr, false);
    json metrics = s.is_object() ? Metrics(s) : json::array();
    return json{
        {"resourceMetrics",
         json::array({{{"resource", Resource(r, id, ctx)},
                       {"scopeMetrics",
                        json::array({{{"scope", Scope(id)}, {"metrics", std::move(metrics)}}})}}})}}
        .dump();
  }
  return json{{"resourceLogs",
               json::array({{{"resource", Resource(r, id, ctx)},
                             {"scopeLogs",
                              json::array({{{"scope", Scope(id)},
                                            {"logRecords", json::array({LogRecord(r)})}}})}}})}}
      .dump();
}

std::string WebhookBody(const SpoolRecord& r, const UplinkIdentity& id, const SendContext& ctx) {
  json record = json::parse(r.body, nullptr, false);
  if (r.kind == "summary" && record.is_object() && record.contains("window")) {
    json q = json::object();
    for (const char* key : {"ttft", "duration"}) {
      for (const auto& [p, qv] :
           {std::pair<const char*, double>{"p50", 0.5}, {"p95", 0.95}, {"p99", 0.99}}) {
        const double v = WindowQuantile(record["window"][key], qv);
        q[std::string(key) + "_" + p + "_s"] = v >= 0 ? json(v) : json(nullptr);
      }
    }
    record["quantiles"] = std::move(q);
  }
  return json{{"box_id", id.box_id},      {"boot_id", r.boot_id},   {"seq", r.seq},
              {"first_seq", r.first_seq}, {"kind", r.kind},         {"time_ms", r.time_ms},
              {"present", ctx.present},   {"backlog", ctx.backlog}, {"record", std::move(record)}}
      .dump();
}

std::string IdempotencyKey(const SpoolRecord& r, const UplinkIdentity& id) {
  return id.box_id + ":" + std::to_string(r.seq);
}

}  // namespace outpost::telemetry

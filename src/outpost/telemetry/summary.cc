#include "outpost/telemetry/summary.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace outpost::telemetry {
namespace {

// The families a summary carries; everything else stays on the box.
const std::set<std::string>& SummaryCounters() {
  static const std::set<std::string> names = {
      "outpost_requests_total",
      "outpost_route_decisions_total",
      "outpost_requests_finished_total",
      "outpost_requests_rejected_total",
      "outpost_prompt_tokens_total",
      "outpost_completion_tokens_total",
      "outpost_prompt_tokens_cached_total",
      "outpost_proxied_prompt_tokens_total",
      "outpost_proxied_completion_tokens_total",
      "outpost_hw_energy_joules_total",
      "outpost_hw_throttle_events_total",
      "outpost_http_timeouts_total",
      "outpost_http_connections_shed_total",
      "outpost_uplink_sent_bytes_total",
  };
  return names;
}

const std::set<std::string>& SummaryHistograms() {
  static const std::set<std::string> names = {
      "gen_ai_server_time_to_first_token_seconds",
      "gen_ai_server_time_per_output_token_seconds",
      "gen_ai_server_request_duration_seconds",
  };
  return names;
}

const std::set<std::string>& SummaryGauges() {
  static const std::set<std::string> names = {
      "outpost_queue_depth",
      "outpost_active_sequences",
      "outpost_max_sessions",
      "outpost_hw_temperature_celsius",
      "outpost_hw_power_watts",
      "outpost_decode_tokens_per_second",
      "outpost_prefill_tokens_per_second",
      "outpost_kv_bytes_used",
      "outpost_kv_usage_ratio",
      "outpost_upstream_up",
      "outpost_hw_utilization_ratio",
      "outpost_hw_memory_used_bytes",
      "outpost_model_loaded",
      "outpost_sensor_up",
      "process_resident_memory_bytes",
      "outpost_spool_records",
      "outpost_uplink_up",
      // The lifecycle: which versions are loaded in which role, a canary's share.
      "outpost_model_version_info",
      "outpost_canary_share_percent",
  };
  return names;
}

nlohmann::json Labels(const StatRegistry::FamilySnapshot& f, const Family::Series& s) {
  nlohmann::json l = nlohmann::json::object();
  for (size_t i = 0; i < f.def.label_names.size() && i < s.labels.size(); ++i) {
    l[f.def.label_names[i]] = s.labels[i];
  }
  return l;
}

std::string LabelOf(const StatRegistry::FamilySnapshot& f, const Family::Series& s,
                    const std::string& name) {
  for (size_t i = 0; i < f.def.label_names.size() && i < s.labels.size(); ++i) {
    if (f.def.label_names[i] == name) return s.labels[i];
  }
  return "";
}

void AddInto(HistogramSnapshot* into, const HistogramSnapshot& h) {
  if (into->bounds.empty()) {
    *into = h;
    return;
  }
  if (into->bounds != h.bounds) return;
  for (size_t i = 0; i < h.cumulative.size() && i < into->cumulative.size(); ++i) {
    into->cumulative[i] += h.cumulative[i];
  }
  into->sum += h.sum;
  into->count += h.count;
}

// Per-bucket counts observed between two cumulative snapshots.
nlohmann::json WindowHist(const HistogramSnapshot& before, const HistogramSnapshot& after) {
  nlohmann::json counts = nlohmann::json::array();
  uint64_t prev_after = 0, prev_before = 0;
  for (size_t i = 0; i < after.cumulative.size(); ++i) {
    const uint64_t a = after.cumulative[i];
    const uint64_t b = i < before.cumulative.size() ? before.cumulative[i] : 0;
    const uint64_t in_a = a - std::min(a, prev_after);
    const uint64_t in_b = b - std::min(b, prev_before);
    counts.push_back(in_a > in_b ? in_a - in_b : 0);
    prev_after = a;
    prev_before = b;
  }
  return {
      {"bounds", after.bounds}, {"counts", counts}, {"sum", std::max(0.0, after.sum - before.sum)}};
}

double Round(double v, double step) {
  return std::round(v / step) * step;
}

}  // namespace

nlohmann::json UplinkEvent::ToJson() const {
  return {{"name", name}, {"severity", severity}, {"time_ms", time_ms}, {"attributes", attributes}};
}

SummaryBuilder::SummaryBuilder(const StatRegistry* registry, const util::Clock* clock)
    : registry_(registry),
      clock_(clock),
      process_start_ms_([&] {
        for (const auto& f : registry->Snapshot()) {
          if (f.def.name == "process_start_time_seconds" && !f.series.empty()) {
            return static_cast<int64_t>(f.series[0].value * 1000);
          }
        }
        return clock->UnixMillis();
      }()),
      start_ms_(clock->UnixMillis()) {
  // The first window's deltas start from what the registry holds now.
  for (const auto& f : registry_->Snapshot()) {
    for (const auto& s : f.series) {
      Accumulate(f, s, &last_);
      const std::string& n = f.def.name;
      if (n == "outpost_hw_throttle_events_total" || n == "outpost_model_swaps_total" ||
          n == "outpost_canary_decisions_total") {
        last_count_[n + Labels(f, s).dump()] = s.value;
      }
    }
  }
}

void SummaryBuilder::Accumulate(const StatRegistry::FamilySnapshot& f, const Family::Series& s,
                                Totals* t) {
  const std::string& n = f.def.name;
  // The window's latencies are what clients waited: a batch's lines (which
  // wait in the lowest class by design) are counted as requests, not there.
  const bool batch = LabelOf(f, s, "openai_response_service_tier") == "batch";
  if (n == "gen_ai_server_time_to_first_token_seconds" && !batch) AddInto(&t->ttft, s.hist);
  if (n == "gen_ai_server_request_duration_seconds") {
    if (!batch) AddInto(&t->duration, s.hist);
    t->requests += static_cast<double>(s.hist.count);
    const std::string err = LabelOf(f, s, "error_type");
    if (!err.empty() && err != "cancelled") t->errors += static_cast<double>(s.hist.count);
  }
  if (n == "outpost_completion_tokens_total") t->tokens += s.value;
  if (n == "outpost_prompt_tokens_total") t->prompt += s.value;
  if (n == "outpost_hw_energy_joules_total") t->energy[Labels(f, s).dump()] = s.value;
}

void SummaryBuilder::Sample() {
  const int64_t now = clock_->UnixMillis();
  for (const auto& f : registry_->Snapshot()) {
    const std::string& n = f.def.name;
    if (SummaryGauges().count(n) != 0) {
      for (const auto& s : f.series) {
        nlohmann::json id = {{"name", n}, {"labels", Labels(f, s)}};
        const std::string key = id.dump();
        GaugeWindow& g = gauges_[key];
        if (g.n == 0) {
          g.min = g.max = s.value;
          gauge_ids_[key] = std::move(id);
        }
        g.min = std::min(g.min, s.value);
        g.max = std::max(g.max, s.value);
        g.sum += s.value;
        g.last = s.value;
        ++g.n;
        if (n == "outpost_model_loaded") {
          // One series per model version (a canary or a swap loads two).
          const std::string model = LabelOf(f, s, "model");
          const std::string version = LabelOf(f, s, "version");
          const std::string key = model + "@" + version;
          const bool loaded = s.value > 0;
          auto it = models_loaded_.find(key);
          if (it == models_loaded_.end() || it->second != loaded) {
            if (loaded || it != models_loaded_.end()) {
              UplinkEvent e{loaded ? "outpost.model.activated" : "outpost.model.unloaded",
                            loaded ? "INFO" : "WARN",
                            now,
                            {{"model", model}}};
              if (!version.empty()) e.attributes["version"] = version;
              events_.push_back(std::move(e));
            }
            models_loaded_[key] = loaded;
          }
        }
      }
    }
    // Counters whose every increment is an event: a throttle, a model
    // version change, a canary decision. The event carries the labels.
    const bool throttle = n == "outpost_hw_throttle_events_total";
    const bool swap = n == "outpost_model_swaps_total";
    const bool canary = n == "outpost_canary_decisions_total";
    if (throttle || swap || canary) {
      for (const auto& s : f.series) {
        const std::string key = n + Labels(f, s).dump();
        const double before = last_count_.count(key) != 0 ? last_count_[key] : 0;
        last_count_[key] = s.value;
        if (s.value <= before) continue;
        UplinkEvent e;
        e.time_ms = now;
        for (size_t i = 0; i < f.def.label_names.size() && i < s.labels.size(); ++i) {
          e.attributes[f.def.label_names[i]] = s.labels[i];
        }
        e.attributes["events"] = std::to_string(static_cast<int64_t>(s.value - before));
        if (throttle) {
          e.name = "outpost.hw.throttled";
          e.severity = "WARN";
        } else if (swap) {
          e.name = "outpost.model." + LabelOf(f, s, "action");  // activate, rollback, promote
          e.severity = LabelOf(f, s, "action") == "rollback" || LabelOf(f, s, "result") != "ok"
                           ? "WARN"
                           : "INFO";
        } else {
          e.name = "outpost.canary." + LabelOf(f, s, "decision");  // start, advance, ..., abort
          e.severity = LabelOf(f, s, "decision") == "abort" ? "WARN" : "INFO";
        }
        events_.push_back(std::move(e));
      }
    }
  }
}

nlohmann::json SummaryBuilder::Close() {
  Sample();
  const int64_t end = clock_->UnixMillis();
  nlohmann::json counters = nlohmann::json::array();
  nlohmann::json histograms = nlohmann::json::array();
  Totals now;
  for (const auto& f : registry_->Snapshot()) {
    const std::string& n = f.def.name;
    for (const auto& s : f.series) {
      if (SummaryCounters().count(n) != 0) {
        counters.push_back({{"name", n}, {"labels", Labels(f, s)}, {"value", s.value}});
      } else if (SummaryHistograms().count(n) != 0) {
        histograms.push_back({{"name", n},
                              {"labels", Labels(f, s)},
                              {"bounds", s.hist.bounds},
                              {"cumulative", s.hist.cumulative},
                              {"sum", s.hist.sum},
                              {"count", s.hist.count}});
      }
      Accumulate(f, s, &now);
    }
  }
  // Energy: the largest meter's delta (the whole package or board; smaller
  // rails are inside it, so a sum would count twice).
  double energy = 0;
  for (const auto& [key, v] : now.energy) {
    const auto it = last_.energy.find(key);
    if (it != last_.energy.end()) energy = std::max(energy, v - it->second);
  }
  nlohmann::json gauges = nlohmann::json::array();
  for (const auto& [key, g] : gauges_) {
    nlohmann::json e = gauge_ids_[key];
    e["last"] = g.last;
    e["min"] = g.min;
    e["max"] = g.max;
    e["mean"] = g.n > 0 ? g.sum / static_cast<double>(g.n) : g.last;
    e["n"] = g.n;
    gauges.push_back(std::move(e));
  }
  const double w_requests = std::max(0.0, now.requests - last_.requests);
  const double w_errors = std::max(0.0, now.errors - last_.errors);
  const double w_tokens = std::max(0.0, now.tokens - last_.tokens);
  nlohmann::json window = {
      {"requests", w_requests},
      {"errors", w_errors},
      {"failure_rate", w_requests > 0 ? Round(w_errors / w_requests, 1e-4) : 0.0},
      {"completion_tokens", w_tokens},
      {"prompt_tokens", std::max(0.0, now.prompt - last_.prompt)},
      {"energy_j", Round(energy, 1e-3)},
      {"ttft", WindowHist(last_.ttft, now.ttft)},
      {"duration", WindowHist(last_.duration, now.duration)},
  };
  if (w_tokens > 0 && energy > 0) window["energy_per_token_j"] = Round(energy / w_tokens, 1e-5);
  // A failure-rate spike is an event once, when it starts.
  const bool spike = w_requests >= kSpikeMinRequests && w_errors >= kSpikeRate * w_requests;
  if (spike && !spiking_) {
    events_.push_back({"outpost.failure_rate.spike",
                       "ERROR",
                       end,
                       {{"failure_rate", std::to_string(w_errors / w_requests)},
                        {"requests", std::to_string(static_cast<int64_t>(w_requests))},
                        {"errors", std::to_string(static_cast<int64_t>(w_errors))}}});
  }
  spiking_ = spike;
  nlohmann::json out = {{"v", 1},
                        {"start_ms", start_ms_},
                        {"end_ms", end},
                        {"process_start_ms", process_start_ms_},
                        {"counters", std::move(counters)},
                        {"histograms", std::move(histograms)},
                        {"gauges", std::move(gauges)},
                        {"window", std::move(window)}};
  start_ms_ = end;
  gauges_.clear();
  gauge_ids_.clear();
  last_ = std::move(now);
  return out;
}

std::vector<UplinkEvent> SummaryBuilder::TakeEvents() {
  std::vector<UplinkEvent> out;
  out.swap(events_);
  return out;
}

namespace {

void AddCounts(nlohmann::json* into, const nlohmann::json& from) {
  if (!into->is_object() || !from.is_object()) return;
  auto& a = (*into)["counts"];
  const auto& b = from["counts"];
  if (!a.is_array() || !b.is_array() || a.size() != b.size()) return;
  for (size_t i = 0; i < a.size(); ++i) a[i] = a[i].get<uint64_t>() + b[i].get<uint64_t>();
  (*into)["sum"] = into->value("sum", 0.0) + from.value("sum", 0.0);
}

}  // namespace

std::string MergeSummaries(const std::string& older_text, const std::string& newer_text) {
  const auto older = nlohmann::json::parse(older_text, nullptr, false);
  auto newer = nlohmann::json::parse(newer_text, nullptr, false);
  if (!older.is_object() || !newer.is_object()) return newer_text;
  try {
    newer["start_ms"] = older.value("start_ms", newer.value("start_ms", int64_t{0}));
    // Gauges: min/max over both, mean weighted by samples, last from newer.
    std::map<std::string, nlohmann::json> old_gauges;
    for (const auto& g : older["gauges"]) {
      old_gauges[nlohmann::json{{"name", g["name"]}, {"labels", g["labels"]}}.dump()] = g;
    }
    for (auto& g : newer["gauges"]) {
      const auto it =
          old_gauges.find(nlohmann::json{{"name", g["name"]}, {"labels", g["labels"]}}.dump());
      if (it == old_gauges.end()) continue;
      const auto& o = it->second;
      const double n_new = g.value("n", 0.0), n_old = o.value("n", 0.0);
      g["min"] = std::min(g["min"].get<double>(), o["min"].get<double>());
      g["max"] = std::max(g["max"].get<double>(), o["max"].get<double>());
      if (n_new + n_old > 0) {
        g["mean"] =
            (g["mean"].get<double>() * n_new + o["mean"].get<double>() * n_old) / (n_new + n_old);
      }
      g["n"] = n_new + n_old;
      old_gauges.erase(it);
    }
    // A gauge seen only in the older window (a sensor gone since) stays.
    for (auto& [key, g] : old_gauges) newer["gauges"].push_back(g);
    auto& w = newer["window"];
    const auto& ow = older["window"];
    for (const char* k : {"requests", "errors", "completion_tokens", "prompt_tokens", "energy_j"}) {
      w[k] = w.value(k, 0.0) + ow.value(k, 0.0);
    }
    const double req = w["requests"].get<double>();
    w["failure_rate"] = req > 0 ? Round(w["errors"].get<double>() / req, 1e-4) : 0.0;
    const double tok = w["completion_tokens"].get<double>();
    const double en = w["energy_j"].get<double>();
    if (tok > 0 && en > 0) {
      w["energy_per_token_j"] = Round(en / tok, 1e-5);
    } else {
      w.erase("energy_per_token_j");
    }
    AddCounts(&w["ttft"], ow["ttft"]);
    AddCounts(&w["duration"], ow["duration"]);
    newer["merged"] = older.value("merged", 1) + newer.value("merged", 1);
  } catch (const nlohmann::json::exception&) {
    return newer_text;
  }
  return newer.dump();
}

double WindowQuantile(const nlohmann::json& h, double q) {
  if (!h.is_object() || !h.contains("bounds") || !h.contains("counts")) return -1;
  const auto& bounds = h["bounds"];
  const auto& counts = h["counts"];
  uint64_t total = 0;
  for (const auto& c : counts) total += c.get<uint64_t>();
  if (total == 0) return -1;
  const double rank = q * static_cast<double>(total);
  uint64_t seen = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const uint64_t c = counts[i].get<uint64_t>();
    if (c > 0 && static_cast<double>(seen + c) >= rank) {
      // The +Inf bucket answers with the highest finite bound.
      if (i >= bounds.size()) return bounds.empty() ? -1 : bounds.back().get<double>();
      const double lo = i == 0 ? 0.0 : bounds[i - 1].get<double>();
      const double hi = bounds[i].get<double>();
      return lo + (hi - lo) * (rank - static_cast<double>(seen)) / static_cast<double>(c);
    }
    seen += c;
  }
  return bounds.empty() ? -1 : bounds.back().get<double>();
}

}  // namespace outpost::telemetry

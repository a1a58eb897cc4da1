#include "outpost/planner/report.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "outpost/util/svg_chart.h"
#include "outpost/util/units.h"

namespace outpost::planner {
namespace {

using util::FormatNumber;

std::string Gb(uint64_t b) {
  return FormatNumber("%.2f GB", static_cast<double>(b) / 1e9);
}
std::string Mb(uint64_t b) {
  return FormatNumber("%.1f MB", static_cast<double>(b) / 1e6);
}
const char* Verdict(bool ok) {
  return ok ? "PASS" : "FAIL";
}

}  // namespace

std::string RenderText(const PlanReport& r) {
  const auto& f = r.fit;
  const auto& s = r.speed;
  const auto& c = r.concurrency;
  const auto& w = r.workload;
  std::ostringstream o;
  o << "Model:    " << r.model.name << " (" << FormatNumber("%.2f", r.model.n_params / 1e9)
    << "B params, " << FormatNumber("%.2f", r.model.bits_per_weight) << " bits/weight, "
    << r.model.n_layers << " layers, " << r.model.n_kv_heads << " KV heads x " << r.model.head_dim
    << ")\n"
    << "Hardware: " << r.hardware.description << " [" << r.hardware.device_class
    << "]: " << Gb(r.hardware.memory_bytes) << ", "
    << FormatNumber("%.0f GB/s", r.hardware.bandwidth_bytes_per_s / 1e9) << ", "
    << FormatNumber("%.0f TOPS", r.hardware.tops) << ", "
    << FormatNumber("%.0f W", r.hardware.power_w) << "\n"
    << "Workload: " << w.peak_sessions << " peak sessions x " << w.context << " tokens, KV "
    << w.kv_type << ", " << FormatNumber("%.0f%%", w.headroom * 100) << " headroom, budget "
    << FormatNumber("%.0f ms/token", w.latency_budget_ms) << ", prompt " << w.prompt_tokens
    << " / answer " << w.answer_tokens << " tokens\n\n";
  o << "Gate 1  fit                                   " << Verdict(f.fits) << "\n"
    << "  weights                       " << Gb(f.weight_bytes) << "\n"
    << "  KV per token                  " << FormatNumber("%.1f KB", f.kv_bytes_per_token / 1e3)
    << "\n"
    << "  KV per session                " << Mb(f.kv_bytes_per_session) << "\n"
    << "  total at peak                 " << Gb(f.peak_bytes) << "\n"
    << "  with headroom                 " << Gb(f.required_bytes) << " of " << Gb(f.memory_bytes)
    << "\n"
    << "  max sessions that fit         " << f.max_sessions << " (at " << w.context << " tokens)\n"
    << "  max context that fits         " << f.max_context << " (at " << w.peak_sessions
    << " sessions)\n";
  if (!f.advice.empty()) o << "  advice                        " << f.advice << "\n";
  o << "\nGate 2  speed                                 " << Verdict(s.meets_budget) << "\n"
    << "  bytes read per token          " << Gb(s.bytes_per_token)
    << " (weights + one session's KV at the full " << w.context << " tokens: the worst case)\n"
    << "  decode ceiling                " << FormatNumber("%.1f tokens/s", s.ceiling_tps)
    << FormatNumber(" (%.1f ms/token)", s.ceiling_ms_per_token) << "\n"
    << "  realistic                     " << FormatNumber("%.1f", s.low_tps) << "-"
    << FormatNumber("%.1f tokens/s", s.high_tps)
    << FormatNumber(" (%.1f ms/token)", s.expected_ms_per_token) << ", " << s.efficiency_source
    << "\n"
    << "  prefill                       " << FormatNumber("%.0f tokens/s", s.prefill_tps) << "\n"
    << "  time to first token           " << FormatNumber("%.0f ms", s.ttft_ms) << " for "
    << w.prompt_tokens << " prompt tokens\n";
  o << "\nGate 3  concurrency                           " << Verdict(c.meets_budget_at_peak) << "\n"
    << "  each session's KV half full on average (" << w.context / 2 << " of " << w.context
    << " tokens), so one session here is faster than gate 2's worst case\n"
    << "  sessions   aggregate tok/s   per user tok/s   memory      bound\n";
  for (const auto& p : c.points) {
    char line[160];
    std::snprintf(line, sizeof line, "  %8d   %15.1f   %14.1f   %-10s  %s\n", p.sessions,
                  p.aggregate_tps, p.per_user_tps, Gb(p.memory_bytes).c_str(),
                  p.compute_bound ? "compute" : "memory");
    o << line;
  }
  o << "  at the peak (" << c.at_peak.sessions
    << "): " << FormatNumber("%.1f tokens/s per user", c.at_peak.per_user_tps) << ", "
    << FormatNumber("%.1f aggregate", c.at_peak.aggregate_tps) << "\n";
  if (c.compute_bound_from > 0)
    o << "  compute becomes the limit from " << c.compute_bound_from << " sessions\n";
  o << "  overflow: " << c.overflow_advice << "\n";
  return o.str();
}

nlohmann::json RenderJson(const PlanReport& r) {
  using nlohmann::json;
  json points = json::array();
  for (const auto& p : r.concurrency.points) {
    points.push_back({{"sessions", p.sessions},
                      {"step_ms", p.step_ms},
                      {"aggregate_tps", p.aggregate_tps},
                      {"per_user_tps", p.per_user_tps},
                      {"memory_bytes", p.memory_bytes},
                      {"bound", p.compute_bound ? "compute" : "memory"}});
  }
  const auto& f = r.fit;
  const auto& s = r.speed;
  return {
      {"model",
       {{"name", r.model.name},
        {"params", r.model.n_params},
        {"bits_per_weight", r.model.bits_per_weight},
        {"weight_bytes", r.model.weight_bytes},
        {"layers", r.model.n_layers},
        {"kv_heads", r.model.n_kv_heads},
        {"head_dim", r.model.head_dim}}},
      {"hardware",
       {{"name", r.hardware.name},
        {"description", r.hardware.description},
        {"class", r.hardware.device_class},
        {"memory_bytes", r.hardware.memory_bytes},
        {"bandwidth_bytes_per_s", r.hardware.bandwidth_bytes_per_s},
        {"tops", r.hardware.tops},
        {"power_w", r.hardware.power_w}}},
      {"workload",
       {{"context", r.workload.context},
        {"peak_sessions", r.workload.peak_sessions},
        {"kv_type", r.workload.kv_type},
        {"headroom", r.workload.headroom},
        {"latency_budget_ms", r.workload.latency_budget_ms},
        {"prompt_tokens", r.workload.prompt_tokens},
        {"answer_tokens", r.workload.answer_tokens}}},
      {"fit",
       {{"verdict", f.fits ? "fits" : "does not fit"},
        {"weight_bytes", f.weight_bytes},
        {"kv_bytes_per_token", f.kv_bytes_per_token},
        {"kv_bytes_per_session", f.kv_bytes_per_session},
        {"peak_bytes", f.peak_bytes},
        {"required_bytes", f.required_bytes},
        {"memory_bytes", f.memory_bytes},
        {"max_sessions", f.max_sessions},
        {"max_context", f.max_context},
        {"advice", f.advice}}},
      {"speed",
       {{"verdict", s.meets_budget ? "meets budget" : "over budget"},
        {"bytes_per_token", s.bytes_per_token},
        {"ceiling_tps", s.ceiling_tps},
        {"ceiling_ms_per_token", s.ceiling_ms_per_token},
        {"realistic_low_tps", s.low_tps},
        {"realistic_high_tps", s.high_tps},
        {"expected_tps", s.expected_tps},
        {"expected_ms_per_token", s.expected_ms_per_token},
        {"prefill_tps", s.prefill_tps},
        {"ttft_ms", s.ttft_ms},
        {"efficiency_source", s.efficiency_source}}},
      {"concurrency",
       {{"verdict",
         r.concurrency.meets_budget_at_peak ? "meets budget at peak" : "over budget at peak"},
        {"points", points},
        {"compute_bound_from", r.concurrency.compute_bound_from},
        {"per_user_tps_at_peak", r.concurrency.at_peak.per_user_tps},
        {"aggregate_tps_at_peak", r.concurrency.at_peak.aggregate_tps},
        {"overflow_advice", r.concurrency.overflow_advice}}},
  };
}

std::string RenderComparison(const std::vector<PlanReport>& reports) {
  std::ostringstream o;
  char line[256];
  std::snprintf(line, sizeof line, "%-28s %-26s %-5s %9s %8s %10s %12s %14s\n", "model", "hardware",
                "fit", "need GB", "max ses", "tok/s", "peak/user", "peak aggregate");
  o << line;
  for (const auto& r : reports) {
    std::snprintf(line, sizeof line, "%-28.28s %-26.26s %-5s %9.2f %8d %10.1f %12.1f %14.1f\n",
                  r.model.name.c_str(), r.hardware.name.c_str(), r.fit.fits ? "yes" : "NO",
                  r.fit.required_bytes / 1e9, r.fit.max_sessions, r.speed.expected_tps,
                  r.concurrency.at_peak.per_user_tps, r.concurrency.at_peak.aggregate_tps);
    o << line;
  }
  return o.str();
}

std::string RenderHtml(const std::vector<PlanReport>& reports) {
  std::ostringstream o;
  o << "<!doctype html><html><head><meta charset=\"utf-8\"><title>outpost plan</title>"
    << "<style>body{font-family:sans-serif;max-width:1000px;margin:2em "
       "auto}pre{background:#f4f4f4;padding:1em}</style>"
    << "</head><body><h1>outpost plan</h1>\n";
  if (reports.size() > 1)
    o << "<h2>Comparison</h2><pre>" << util::HtmlEscape(RenderComparison(reports)) << "</pre>\n";
  for (const auto& r : reports) {
    std::vector<double> xs, agg, per, mem;
    for (const auto& p : r.concurrency.points) {
      xs.push_back(p.sessions);
      agg.push_back(p.aggregate_tps);
      per.push_back(p.per_user_tps);
      mem.push_back(p.memory_bytes / 1e9);
    }
    o << "<h2>" << util::HtmlEscape(r.model.name) << " on "
      << util::HtmlEscape(r.hardware.description) << "</h2>\n<pre>"
      << util::HtmlEscape(RenderText(r)) << "</pre>\n"
      << util::SvgLineChart("Tokens/s vs sessions", "sessions", "tokens/s", xs,
                            {{"aggregate", agg}, {"per user", per}})
      << util::SvgLineChart(
             "Memory vs sessions", "sessions", "GB", xs,
             {{"weights + KV", mem},
              {"device memory", std::vector<double>(xs.size(), r.hardware.memory_bytes / 1e9)}});
  }
  o << "</body></html>\n";
  return o.str();
}

}  // namespace outpost::planner

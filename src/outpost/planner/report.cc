#include "outpost/planner/report.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "outpost/util/html_page.h"
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
    << "  KV per session                " << Mb(f.kv_bytes_per_session) << "\n";
  if (r.model.runtime_bytes > 0) {
    o << "  runtime at peak               " << Mb(f.runtime_bytes) << " (" << r.model.runtime_source
      << ")\n";
  }
  o << "  total at peak                 " << Gb(f.peak_bytes) << "\n"
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
  const DeployMemory d = DeployMemoryFor(r);
  o << "\nDeploy ("
    << (r.model.runtime_bytes > 0
            ? std::string("the peak with headroom, runtime included: the budget `serve` needs")
            : "the peak with headroom + " + MebibytesText(kRuntimeOverheadBytes) +
                  " for the runtime")
    << "; docs/deploy.md)\n"
    << "  systemd       MemoryHigh=" << MebibytesText(d.request_bytes)
    << " MemoryMax=" << MebibytesText(d.limit_bytes) << "\n"
    << "  Kubernetes    requests.memory: " << MebibytesText(d.request_bytes)
    << "i  limits.memory: " << MebibytesText(d.limit_bytes) << "i\n";
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
        {"runtime_bytes", f.runtime_bytes},
        {"runtime_source", r.model.runtime_source},
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
      {"deploy",
       {{"memory_request_bytes", DeployMemoryFor(r).request_bytes},
        {"memory_limit_bytes", DeployMemoryFor(r).limit_bytes},
        {"systemd", "MemoryHigh=" + MebibytesText(DeployMemoryFor(r).request_bytes) +
                        " MemoryMax=" + MebibytesText(DeployMemoryFor(r).limit_bytes)},
        {"kubernetes",
         {{"requests", {{"memory", MebibytesText(DeployMemoryFor(r).request_bytes) + "i"}}},
          {"limits", {{"memory", MebibytesText(DeployMemoryFor(r).limit_bytes) + "i"}}}}}}},
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

namespace {

std::vector<std::string> Cells(std::initializer_list<std::string> c) {
  return std::vector<std::string>(c);
}

util::LineChart SessionsChart(const std::string& title, const std::string& y_label,
                              const std::vector<double>& xs) {
  util::LineChart c;
  c.title = title;
  c.x = {"concurrent sessions", xs.size() > 1 && xs.back() / xs.front() > 64};
  c.y = {y_label, false};
  c.xs = xs;
  return c;
}

std::string ReportHtml(const PlanReport& r) {
  const auto& f = r.fit;
  const auto& s = r.speed;
  const auto& c = r.concurrency;
  const auto& w = r.workload;
  std::ostringstream o;
  o << "<h2>" << util::HtmlEscape(r.model.name) << " on "
    << util::HtmlEscape(r.hardware.description) << "</h2>\n<div class=\"cards\">"
    << "<div class=\"card\">Gate 1: fit " << util::Badge(f.fits, Verdict(f.fits)) << "<b>"
    << Gb(f.required_bytes) << " of " << Gb(f.memory_bytes) << "</b>up to " << f.max_sessions
    << " sessions of " << w.context << " tokens</div>"
    << "<div class=\"card\">Gate 2: speed " << util::Badge(s.meets_budget, Verdict(s.meets_budget))
    << "<b>" << FormatNumber("%.1f tokens/s", s.expected_tps) << "</b>"
    << FormatNumber("%.1f ms/token", s.expected_ms_per_token) << " against a budget of "
    << FormatNumber("%.0f ms", w.latency_budget_ms) << "</div>"
    << "<div class=\"card\">Gate 3: users "
    << util::Badge(c.meets_budget_at_peak, Verdict(c.meets_budget_at_peak)) << "<b>"
    << FormatNumber("%.1f tokens/s per user", c.at_peak.per_user_tps) << "</b>at the peak of "
    << c.at_peak.sessions << " sessions ("
    << FormatNumber("%.1f aggregate", c.at_peak.aggregate_tps) << ")</div></div>\n";

  util::HtmlTable setup;
  setup.caption = "Inputs";
  setup.header = {"", ""};
  setup.rows = {
      Cells({"model", r.model.name + " (" + FormatNumber("%.2fB params, ", r.model.n_params / 1e9) +
                          FormatNumber("%.2f bits/weight, ", r.model.bits_per_weight) +
                          std::to_string(r.model.n_layers) + " layers, " +
                          std::to_string(r.model.n_kv_heads) + " KV heads x " +
                          std::to_string(r.model.head_dim) + ")"}),
      Cells({"hardware", r.hardware.description + " [" + r.hardware.device_class +
                             "]: " + Gb(r.hardware.memory_bytes) + ", " +
                             FormatNumber("%.0f GB/s, ", r.hardware.bandwidth_bytes_per_s / 1e9) +
                             FormatNumber("%.0f TOPS, ", r.hardware.tops) +
                             FormatNumber("%.0f W", r.hardware.power_w)}),
      Cells({"workload", std::to_string(w.peak_sessions) + " peak sessions x " +
                             std::to_string(w.context) + " tokens, KV " + w.kv_type + ", " +
                             FormatNumber("%.0f%% headroom, ", w.headroom * 100) + "budget " +
                             FormatNumber("%.0f ms/token, ", w.latency_budget_ms) + "prompt " +
                             std::to_string(w.prompt_tokens) + " / answer " +
                             std::to_string(w.answer_tokens) + " tokens"})};
  o << util::RenderTable(setup);

  util::HtmlTable fit;
  fit.caption = "Gate 1: fit";
  fit.header = {"quantity", "value"};
  fit.numeric = {false, true};
  fit.rows = {Cells({"weights", Gb(f.weight_bytes)}),
              Cells({"KV per token", FormatNumber("%.1f KB", f.kv_bytes_per_token / 1e3)}),
              Cells({"KV per session", Mb(f.kv_bytes_per_session)}),
              Cells({"runtime at the peak" + (r.model.runtime_source.empty()
                                                  ? std::string(" (not counted)")
                                                  : " (" + r.model.runtime_source + ")"),
                     Mb(f.runtime_bytes)}),
              Cells({"total at the peak", Gb(f.peak_bytes)}),
              Cells({"with headroom", Gb(f.required_bytes) + " of " + Gb(f.memory_bytes)}),
              Cells({"max sessions that fit (at " + std::to_string(w.context) + " tokens)",
                     std::to_string(f.max_sessions)}),
              Cells({"max context that fits (at " + std::to_string(w.peak_sessions) + " sessions)",
                     std::to_string(f.max_context)})};
  o << util::RenderTable(fit);
  if (!f.advice.empty()) o << "<p class=\"note\">" << util::HtmlEscape(f.advice) << "</p>\n";

  util::HtmlTable speed;
  speed.caption = "Gate 2: speed of one session (its KV at the full " + std::to_string(w.context) +
                  " tokens: the worst case)";
  speed.header = {"quantity", "value"};
  speed.numeric = {false, true};
  speed.rows = {
      Cells({"bytes read per token", Gb(s.bytes_per_token)}),
      Cells({"decode ceiling", FormatNumber("%.1f tokens/s", s.ceiling_tps) +
                                   FormatNumber(" (%.1f ms/token)", s.ceiling_ms_per_token)}),
      Cells({"realistic (" + s.efficiency_source + ")",
             FormatNumber("%.1f", s.low_tps) + FormatNumber("-%.1f tokens/s", s.high_tps)}),
      Cells({"prefill", FormatNumber("%.0f tokens/s", s.prefill_tps)}),
      Cells({"time to first token (" + std::to_string(w.prompt_tokens) + " prompt tokens)",
             FormatNumber("%.0f ms", s.ttft_ms)})};
  o << util::RenderTable(speed);

  util::HtmlTable users;
  users.caption = "Gate 3: users (each session's KV half full on average, " +
                  std::to_string(w.context / 2) + " of " + std::to_string(w.context) + " tokens)";
  users.header = {"sessions", "aggregate tokens/s", "per user tokens/s", "memory", "bound by"};
  users.numeric = {true, true, true, true, false};
  for (const auto& p : c.points) {
    users.rows.push_back(Cells({std::to_string(p.sessions), FormatNumber("%.1f", p.aggregate_tps),
                                FormatNumber("%.1f", p.per_user_tps), Gb(p.memory_bytes),
                                p.compute_bound ? "compute" : "memory bandwidth"}));
  }
  o << util::RenderTable(users);
  if (c.compute_bound_from > 0)
    o << "<p class=\"note\">Compute becomes the limit from " << c.compute_bound_from
      << " sessions.</p>\n";
  o << "<p class=\"note\">Overflow: " << util::HtmlEscape(c.overflow_advice) << "</p>\n";

  std::vector<double> xs, agg, per, mem, budget, device;
  for (const auto& p : c.points) {
    xs.push_back(p.sessions);
    agg.push_back(p.aggregate_tps);
    per.push_back(p.per_user_tps);
    mem.push_back(p.memory_bytes / 1e9);
    budget.push_back(1000.0 / w.latency_budget_ms);
    device.push_back(r.hardware.memory_bytes / 1e9);
  }
  util::LineChart tps = SessionsChart("Tokens/s as sessions grow", "tokens/s", xs);
  tps.series = {{"aggregate", agg, false},
                {"per user", per, false},
                {"per-user floor of the latency budget", budget, true}};
  util::LineChart memory = SessionsChart("Memory as sessions grow", "GB", xs);
  memory.series = {
      {r.model.runtime_bytes > 0 ? "weights + runtime + KV" : "weights + KV", mem, false},
      {"device memory", device, true}};
  o << util::SvgLineChart(tps) << util::SvgLineChart(memory);
  return o.str();
}

}  // namespace

std::string RenderHtml(const std::vector<PlanReport>& reports) {
  std::ostringstream o;
  if (reports.size() > 1) {
    util::HtmlTable t;
    t.caption = "Comparison";
    t.header = {"model",
                "hardware",
                "fit",
                "needs",
                "max sessions",
                "tokens/s",
                "per user at peak",
                "aggregate at peak"};
    t.numeric = {false, false, false, true, true, true, true, true};
    for (const auto& r : reports) {
      t.rows.push_back(Cells({r.model.name, r.hardware.description, r.fit.fits ? "yes" : "NO",
                              Gb(r.fit.required_bytes), std::to_string(r.fit.max_sessions),
                              FormatNumber("%.1f", r.speed.expected_tps),
                              FormatNumber("%.1f", r.concurrency.at_peak.per_user_tps),
                              FormatNumber("%.1f", r.concurrency.at_peak.aggregate_tps)}));
    }
    o << util::RenderTable(t);
  }
  for (const auto& r : reports) o << ReportHtml(r);
  return util::HtmlPage("outpost plan", o.str());
}

}  // namespace outpost::planner

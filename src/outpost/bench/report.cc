// Rendering of BenchReports: terminal table, JSON (also the input of
// `outpost plan --calibrate`), and HTML with SVG charts.
#include <cmath>
#include <cstdio>
#include <sstream>

#include "outpost/bench/report.h"
#include "outpost/util/html_page.h"
#include "outpost/util/svg_chart.h"
#include "outpost/util/units.h"

namespace outpost::bench {

using util::FormatNumber;

nlohmann::json BenchJson(const BenchReport& r) {
  using nlohmann::json;
  json sweep = json::array();
  for (const auto& p : r.sweep) {
    sweep.push_back({{"sessions", p.sessions},
                     {"aggregate_tps", p.aggregate_tps},
                     {"per_user_tps", p.per_user_tps},
                     {"ttft_p50_s", p.ttft_s.p50},
                     {"ttft_p99_s", p.ttft_s.p99},
                     {"itl_p50_s", p.itl_s.p50},
                     {"itl_p99_s", p.itl_s.p99}});
  }
  json sustained = json::array();
  for (const auto& s : r.sustained) {
    sustained.push_back({{"t_s", s.t_s},
                         {"tps", s.tps},
                         {"cpu_temp_c", s.cpu_temp_c},
                         {"cpu_mhz", s.cpu_mhz},
                         {"cpu_power_w", s.cpu_power_w},
                         {"gpu_temp_c", s.gpu_temp_c},
                         {"gpu_mhz", s.gpu_mhz},
                         {"gpu_power_w", s.gpu_power_w}});
  }
  return {
      {"model", r.model_name},
      {"machine", r.machine},
      {"cpus", r.cpus},
      {"threads", r.threads},
      {"bandwidth", {{"read_gbps", r.read_gbps}, {"triad_gbps", r.triad_gbps}}},
      {"prefill_tps", r.prefill_tps},
      {"decode_tps", r.decode_tps},
      {"ceiling_tps", r.ceiling_tps},
      {"sweep", sweep},
      {"memory",
       {{"rss_after_load_bytes", r.rss_after_load},
        {"rss_all_sessions_full_bytes", r.rss_full},
        {"planned_bytes", r.planned_bytes},
        {"error_pct", r.memory_error_pct},
        {"sessions", r.sessions},
        {"ctx_per_session", r.ctx_per_session}}},
      {"sustained",
       {{"samples", sustained},
        {"first_minute_tps", r.first_minute_tps},
        {"sustained_tps", r.sustained_tps},
        {"throttled", r.throttled},
        {"sensor_sources", r.sensor_sources}}},
      {"calibration", {{"decode_efficiency", r.decode_efficiency}, {"prefill_efficiency", 0.0}}}};
}

std::string BenchText(const BenchReport& r) {
  std::ostringstream o;
  o << "Model " << r.model_name << " on " << r.machine << " (" << r.cpus << "), " << r.threads
    << " threads\n\n"
    << "memory bandwidth        read " << FormatNumber("%.1f", r.read_gbps) << " GB/s, triad "
    << FormatNumber("%.1f", r.triad_gbps) << " GB/s\n"
    << "prefill                 " << FormatNumber("%.1f tokens/s", r.prefill_tps) << "\n"
    << "decode (1 sequence)     " << FormatNumber("%.1f tokens/s", r.decode_tps) << " = "
    << FormatNumber("%.0f%%", r.decode_efficiency * 100) << " of the bandwidth ceiling ("
    << FormatNumber("%.1f tokens/s", r.ceiling_tps) << ")\n\n"
    << "sessions  aggregate tok/s  per user tok/s  TTFT p50/p99 ms   ITL p50/p99 ms\n";
  for (const auto& p : r.sweep) {
    char line[160];
    std::snprintf(line, sizeof line, "%8d  %15.1f  %14.1f  %7.0f / %-7.0f  %6.1f / %-6.1f\n",
                  p.sessions, p.aggregate_tps, p.per_user_tps, p.ttft_s.p50 * 1000,
                  p.ttft_s.p99 * 1000, p.itl_s.p50 * 1000, p.itl_s.p99 * 1000);
    o << line;
  }
  o << "\nmemory                  after load "
    << FormatNumber("%.1f MiB", r.rss_after_load / 1048576.0) << ", all " << r.sessions
    << " sessions full (" << r.ctx_per_session << " tokens) "
    << FormatNumber("%.1f MiB", r.rss_full / 1048576.0) << "; plan predicted "
    << FormatNumber("%.1f MiB", r.planned_bytes / 1048576.0) << " (error "
    << FormatNumber("%+.1f%%", r.memory_error_pct) << ")\n";
  if (!r.sustained.empty()) {
    o << "sustained               first minute " << FormatNumber("%.1f", r.first_minute_tps)
      << " tok/s, last stretch " << FormatNumber("%.1f", r.sustained_tps) << " tok/s"
      << (r.throttled ? "  THROTTLED" : "  (no throttling)")
      << "\n                        size with " << FormatNumber("%.1f tokens/s", r.sustained_tps)
      << "; sensors: " << r.sensor_sources << "\n";
  }
  return o.str();
}

std::string BenchHtml(const BenchReport& r) {
  using util::HtmlEscape;
  std::ostringstream o;
  o << "<p>" << HtmlEscape(r.model_name) << " on " << HtmlEscape(r.machine) << " ("
    << HtmlEscape(r.cpus) << "), " << r.threads
    << " threads.</p>\n<div class=\"cards\"><div class=\"card\">decode, one sequence<b>"
    << FormatNumber("%.1f tokens/s", r.decode_tps) << "</b>"
    << FormatNumber("%.0f%% of the bandwidth ceiling (", r.decode_efficiency * 100)
    << FormatNumber("%.1f tokens/s)", r.ceiling_tps) << "</div><div class=\"card\">prefill<b>"
    << FormatNumber("%.1f tokens/s", r.prefill_tps) << "</b>one prompt</div>"
    << "<div class=\"card\">memory bandwidth<b>" << FormatNumber("%.1f GB/s", r.read_gbps)
    << "</b>read (triad " << FormatNumber("%.1f GB/s", r.triad_gbps) << ")</div></div>\n";

  util::HtmlTable sweep;
  sweep.caption = "Concurrency sweep";
  sweep.header = {"sessions",    "aggregate tokens/s", "per user tokens/s", "TTFT p50 ms",
                  "TTFT p99 ms", "ITL p50 ms",         "ITL p99 ms"};
  sweep.numeric = std::vector<bool>(7, true);
  for (const auto& p : r.sweep) {
    sweep.rows.push_back(
        {std::to_string(p.sessions), FormatNumber("%.1f", p.aggregate_tps),
         FormatNumber("%.1f", p.per_user_tps), FormatNumber("%.0f", p.ttft_s.p50 * 1000),
         FormatNumber("%.0f", p.ttft_s.p99 * 1000), FormatNumber("%.1f", p.itl_s.p50 * 1000),
         FormatNumber("%.1f", p.itl_s.p99 * 1000)});
  }
  o << util::RenderTable(sweep);

  util::HtmlTable mem;
  mem.caption = "Memory";
  mem.header = {"quantity", "value"};
  mem.numeric = {false, true};
  mem.rows = {{"resident after load", FormatNumber("%.1f MiB", r.rss_after_load / 1048576.0)},
              {"all " + std::to_string(r.sessions) + " sessions full (" +
                   std::to_string(r.ctx_per_session) + " tokens each)",
               FormatNumber("%.1f MiB", r.rss_full / 1048576.0)},
              {"plan predicted", FormatNumber("%.1f MiB", r.planned_bytes / 1048576.0)},
              {"plan error", FormatNumber("%+.1f%%", r.memory_error_pct)}};
  o << util::RenderTable(mem);

  std::vector<double> xs, agg, per, ttft50, ttft99;
  for (const auto& p : r.sweep) {
    xs.push_back(p.sessions);
    agg.push_back(p.aggregate_tps);
    per.push_back(p.per_user_tps);
    ttft50.push_back(p.ttft_s.p50 * 1000);
    ttft99.push_back(p.ttft_s.p99 * 1000);
  }
  util::LineChart tps;
  tps.title = "Tokens/s as sessions grow";
  tps.x = {"concurrent sessions", false};
  tps.y = {"tokens/s", false};
  tps.xs = xs;
  tps.series = {{"aggregate", agg, false}, {"per user", per, false}};
  util::LineChart ttft = tps;
  ttft.title = "Time to first token as sessions grow";
  ttft.y = {"milliseconds", false};
  ttft.series = {{"TTFT p50", ttft50, false}, {"TTFT p99", ttft99, true}};
  o << util::SvgLineChart(tps) << util::SvgLineChart(ttft);

  if (!r.sustained.empty()) {
    o << "<h2>Sustained load</h2>\n<p>First minute " << FormatNumber("%.1f", r.first_minute_tps)
      << " tokens/s, last stretch " << FormatNumber("%.1f", r.sustained_tps) << " tokens/s: "
      << (r.throttled ? util::Badge(false, "throttled") : util::Badge(true, "no throttling"))
      << ". Size with " << FormatNumber("%.1f tokens/s", r.sustained_tps)
      << ". Sensors: " << HtmlEscape(r.sensor_sources) << ".</p>\n";
    std::vector<double> ts, rate, temp;
    for (const auto& s : r.sustained) {
      ts.push_back(s.t_s);
      rate.push_back(s.tps);
      temp.push_back(s.cpu_temp_c > 0 ? s.cpu_temp_c : std::nan(""));
    }
    util::LineChart load;
    load.title = "Decode rate under sustained load";
    load.x = {"seconds", false};
    load.y = {"tokens/s", false};
    load.xs = ts;
    load.series = {{"tokens/s", rate, false}};
    o << util::SvgLineChart(load);
    if (r.sustained.front().cpu_temp_c > 0) {
      util::LineChart heat = load;
      heat.title = "CPU temperature under sustained load";
      heat.y = {"degrees C", false};
      heat.series = {{"CPU temperature", temp, false}};
      o << util::SvgLineChart(heat);
    }
  }
  o << "<h2>As text</h2>\n<pre>" << HtmlEscape(BenchText(r)) << "</pre>\n";
  return util::HtmlPage("outpost bench", o.str());
}

}  // namespace outpost::bench

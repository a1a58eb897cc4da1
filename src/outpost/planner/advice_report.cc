#include "outpost/planner/advice_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "outpost/util/html_page.h"
#include "outpost/util/svg_chart.h"
#include "outpost/util/units.h"

namespace outpost::planner {
namespace {

using util::FormatNumber;

std::string Decides(const RuleResult& r) {
  if (r.decides == Placement::kNone) return "-";
  return std::string(PlacementName(r.decides)) + (r.hard ? " (requirement)" : " (preference)");
}

std::string VerdictText(Placement p) {
  switch (p) {
    case Placement::kEdge:
      return "EDGE: on the device or an edge box at the site";
    case Placement::kOnPremises:
      return "ON-PREMISES: the organisation's own servers";
    case Placement::kCloud:
      return "CLOUD: a hosted or central model";
    case Placement::kHybrid:
      return "HYBRID: local first, central for the rest";
    case Placement::kNone:
      break;
  }
  return "-";
}

std::string Gates(const LocalCandidate& c) {
  std::string s;
  s += c.plan.fit.fits ? "fit " : "FIT ";
  s += c.plan.speed.meets_budget ? "speed " : "SPEED ";
  s += c.plan.concurrency.meets_budget_at_peak ? "users" : "USERS";
  return s;
}

std::string WorkloadLine(const Advice& a) {
  const AdviseWorkload& w = a.workload;
  return w.name + ": " + FormatNumber("%.0f requests/day", w.requests_per_day) + " x " +
         FormatNumber("%.0f tokens", w.tokens_per_request) + ", answer within " +
         FormatNumber("%.0f ms", w.response_budget_ms) + ", data boundary " +
         DataBoundaryName(w.boundary) + ", needs " + a.model.name +
         (w.easy_share > 0 ? FormatNumber(" (%.0f%% of requests easy)", w.easy_share * 100) : "") +
         (w.offline_required ? ", must work offline" : "");
}

// Wraps `text` at `width` columns with `indent` spaces before each line.
std::string Wrap(const std::string& text, size_t width, size_t indent) {
  std::string out, line;
  std::istringstream words(text);
  std::string word;
  while (words >> word) {
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += std::string(indent, ' ') + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) out += std::string(indent, ' ') + line + "\n";
  return out;
}

}  // namespace

std::string AdviceText(const Advice& a) {
  std::ostringstream o;
  o << "Workload: " << WorkloadLine(a) << "\n"
    << "Verdict:  " << VerdictText(a.verdict) << "\n"
    << Wrap(a.summary, 78, 10) << "\n";
  for (const auto& r : a.rules) {
    char head[128];
    std::snprintf(head, sizeof head, "%d. %-24s %s\n", r.number, r.question.c_str(),
                  Decides(r).c_str());
    o << head << Wrap(r.why, 76, 3);
  }
  o << "\nLocal hardware for " << a.local_model.name << " (the planner's three gates at "
    << (a.candidates.empty() ? 0 : a.candidates[0].plan.workload.peak_sessions)
    << " peak sessions):\n";
  char line[200];
  std::snprintf(line, sizeof line, "  %-24s %-18s %12s %14s %10s\n", "hardware", "gates",
                "tokens/s", "tokens/day", "price");
  o << line;
  for (const auto& c : a.candidates) {
    std::snprintf(line, sizeof line, "  %-24.24s %-18s %12.1f %14.0f %9.0f%s\n",
                  c.plan.hardware.name.c_str(), Gates(c).c_str(),
                  c.plan.concurrency.at_peak.aggregate_tps, c.capacity_tokens_per_day, c.box_usd,
                  c.price_assumed ? "*" : " ");
    o << line;
  }
  if (!a.candidates.empty() && a.candidates[0].price_assumed)
    o << "  * assumed typical price of the class; give --box-price for a real quote\n";
  if (a.chosen != nullptr) o << "  costed: " << a.chosen->plan.hardware.name << "\n";
  return o.str();
}

nlohmann::json AdviceJson(const Advice& a) {
  using nlohmann::json;
  json rules = json::array();
  for (const auto& r : a.rules) {
    rules.push_back({{"number", r.number},
                     {"question", r.question},
                     {"decides", PlacementName(r.decides)},
                     {"requirement", r.hard},
                     {"why", r.why}});
  }
  json candidates = json::array();
  for (const auto& c : a.candidates) {
    candidates.push_back({{"hardware", c.plan.hardware.name},
                          {"class", c.plan.hardware.device_class},
                          {"passes", c.passes},
                          {"fit", c.plan.fit.fits},
                          {"speed", c.plan.speed.meets_budget},
                          {"users", c.plan.concurrency.meets_budget_at_peak},
                          {"aggregate_tps_at_peak", c.plan.concurrency.at_peak.aggregate_tps},
                          {"capacity_tokens_per_day", c.capacity_tokens_per_day},
                          {"price_usd", c.box_usd},
                          {"price_assumed", c.price_assumed}});
  }
  const AdviseWorkload& w = a.workload;
  return {
      {"verdict", PlacementName(a.verdict)},
      {"summary", a.summary},
      {"rules", rules},
      {"workload",
       {{"name", w.name},
        {"response_budget_ms", w.response_budget_ms},
        {"cloud_rtt_ms", w.cloud_rtt_ms},
        {"cloud_ttft_ms", w.cloud_ttft_ms},
        {"network_reliable", w.network_reliable},
        {"data_boundary", DataBoundaryName(w.boundary)},
        {"model_params", w.model_params},
        {"easy_share", w.easy_share},
        {"requests_per_day", w.requests_per_day},
        {"tokens_per_request", w.tokens_per_request},
        {"cloud_usd_per_mtok", w.cloud_usd_per_mtok},
        {"update_interval_days", w.update_interval_days},
        {"remote_updates", w.remote_updates},
        {"offline", w.offline_required}}},
      {"model", {{"name", a.model.name}, {"weight_bytes", a.model.weight_bytes}}},
      {"local_model", {{"name", a.local_model.name}, {"weight_bytes", a.local_model.weight_bytes}}},
      {"candidates", candidates},
      {"cost",
       {{"box", a.cost.box},
        {"boxes", a.cost.boxes},
        {"cloud_usd_per_month", a.cost.cloud_usd_per_month},
        {"local_usd_per_month", a.cost.local_usd_per_month},
        {"box_usd_per_month", a.cost.box_usd_per_month},
        {"power_usd_per_month", a.cost.power_usd_per_month},
        {"local_share", a.cost.local_share},
        {"crossover_requests_per_day", a.cost.crossover_requests_per_day}}}};
}

std::string CostChartSvg(const Advice& a) {
  const AdviseWorkload& w = a.workload;
  util::LineChart c;
  c.title = "Monthly cost against request volume";
  c.x = {"requests per day", true};
  c.y = {"USD per month", true};
  double lo = w.requests_per_day, hi = w.requests_per_day;
  if (a.cost.crossover_requests_per_day > 0) {
    lo = std::min(lo, a.cost.crossover_requests_per_day);
    hi = std::max(hi, a.cost.crossover_requests_per_day);
  }
  lo = std::pow(10.0, std::floor(std::log10(lo / 10)));
  hi = std::pow(10.0, std::ceil(std::log10(hi * 10)));
  constexpr int kPoints = 97;
  std::vector<double> cloud, local;
  for (int i = 0; i < kPoints; ++i) {
    const double v = lo * std::pow(hi / lo, static_cast<double>(i) / (kPoints - 1));
    c.xs.push_back(v);
    cloud.push_back(CloudUsdPerMonth(w, v));
    if (a.chosen != nullptr)
      local.push_back(
          LocalUsdPerMonth(w, v, a.cost.box_usd_per_month, a.chosen->capacity_tokens_per_day));
  }
  c.series.push_back(
      {"cloud (" + FormatNumber("$%.2f", w.cloud_usd_per_mtok) + " per million tokens)", cloud,
       false});
  if (a.chosen != nullptr) {
    const std::string label =
        a.cost.local_share < 1
            ? "hybrid (" + a.chosen->plan.hardware.name + " boxes for the easy " +
                  FormatNumber("%.0f%%", a.cost.local_share * 100) + ", cloud for the rest)"
            : "boxes (" + a.chosen->plan.hardware.name + ", incl. power)";
    c.series.push_back({label, local, true});
  }
  if (a.cost.crossover_requests_per_day > 0)
    c.markers.push_back(
        {a.cost.crossover_requests_per_day,
         "crossover " + util::SiNumber(a.cost.crossover_requests_per_day) + "/day"});
  c.markers.push_back(
      {w.requests_per_day, "this workload " + util::SiNumber(w.requests_per_day) + "/day"});
  return util::SvgLineChart(c);
}

std::string AdviceHtml(const Advice& a) {
  std::ostringstream o;
  o << "<p>" << util::HtmlEscape(WorkloadLine(a)) << "</p>\n<div class=\"cards\"><div "
    << "class=\"card\">Verdict<b>" << util::HtmlEscape(VerdictText(a.verdict)) << "</b>"
    << util::HtmlEscape(a.summary) << "</div></div>\n";
  util::HtmlTable rules;
  rules.caption = "The six questions, in order";
  rules.header = {"#", "question", "decides", "why"};
  rules.numeric = {true, false, false, false};
  for (const auto& r : a.rules)
    rules.rows.push_back({std::to_string(r.number), r.question, Decides(r), r.why});
  o << util::RenderTable(rules);

  util::HtmlTable hw;
  hw.caption = "Local hardware for " + a.local_model.name + " (the planner's three gates)";
  hw.header = {"hardware",         "class",      "fit",  "speed", "users",
               "tokens/s at peak", "tokens/day", "price"};
  hw.numeric = {false, false, false, false, false, true, true, true};
  for (const auto& c : a.candidates) {
    hw.rows.push_back({c.plan.hardware.name, c.plan.hardware.device_class,
                       c.plan.fit.fits ? "pass" : "FAIL",
                       c.plan.speed.meets_budget ? "pass" : "FAIL",
                       c.plan.concurrency.meets_budget_at_peak ? "pass" : "FAIL",
                       FormatNumber("%.1f", c.plan.concurrency.at_peak.aggregate_tps),
                       util::SiNumber(c.capacity_tokens_per_day),
                       FormatNumber("$%.0f", c.box_usd) + (c.price_assumed ? " (assumed)" : "")});
  }
  o << util::RenderTable(hw);

  o << "<h2>Cost</h2>\n";
  if (a.chosen != nullptr) {
    util::HtmlTable cost;
    cost.header = {"", "USD per month"};
    cost.numeric = {false, true};
    cost.rows = {
        {"cloud at this volume", FormatNumber("%.2f", a.cost.cloud_usd_per_month)},
        {std::to_string(a.cost.boxes) + " x " + a.cost.box + " (price over lifetime + power)" +
             (a.cost.local_share < 1 ? ", plus the cloud for the hard requests" : ""),
         FormatNumber("%.2f", a.cost.local_usd_per_month)},
        {"of which power", FormatNumber("%.2f", a.cost.power_usd_per_month * a.cost.boxes)}};
    o << util::RenderTable(cost);
  }
  o << "<p class=\"note\">" << util::HtmlEscape(a.rules.size() > 3 ? a.rules[3].why : "")
    << ". The cost does not vanish on a box: it moves to the site's hardware and power.</p>\n"
    << CostChartSvg(a);
  if (a.verdict == Placement::kHybrid)
    o << "<h2>Starting routing file</h2>\n<pre>" << util::HtmlEscape(HybridRoutingYaml(a))
      << "</pre>\n";
  return util::HtmlPage("outpost plan --advise", o.str());
}

}  // namespace outpost::planner

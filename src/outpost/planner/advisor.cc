#include "outpost/planner/advisor.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "outpost/util/units.h"
#include "outpost/util/yaml_file.h"

namespace outpost::planner {
namespace {

using util::FormatNumber;

constexpr double kDaysPerMonth = 30.44;
constexpr double kHoursPerMonth = kDaysPerMonth * 24;
// A hybrid split pays off when most requests are easy.
constexpr double kEasyShareForHybrid = 0.5;
// Costs within this ratio of each other decide nothing.
constexpr double kCostTie = 0.10;

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// "3.5", "10M", "2k", "1.5B", "1e6" → number; suffix multiplies.
bool ParseScaled(const std::string& text, double* out) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(v)) return false;
  std::string suf = Lower(std::string(end));
  suf.erase(std::remove_if(suf.begin(), suf.end(), [](char c) { return std::isspace(c) != 0; }),
            suf.end());
  if (suf == "k")
    v *= 1e3;
  else if (suf == "m")
    v *= 1e6;
  else if (suf == "b" || suf == "g")
    v *= 1e9;
  else if (!suf.empty())
    return false;
  *out = v;
  return true;
}

// "80%" or "0.8" → 0.8.
bool ParseShare(const std::string& text, double* out) {
  std::string t = text;
  const bool pct = !t.empty() && t.back() == '%';
  if (pct) t.pop_back();
  char* end = nullptr;
  double v = std::strtod(t.c_str(), &end);
  if (t.empty() || *end || !std::isfinite(v)) return false;
  if (pct) v /= 100;
  if (v < 0 || v > 1) return false;
  *out = v;
  return true;
}

// "$0.50", "0.5", "1,200" → 0.5, 1200.
bool ParseUsd(const std::string& text, double* out) {
  std::string t;
  for (char c : text) {
    if (c != '$' && c != ',' && !std::isspace(static_cast<unsigned char>(c))) t += c;
  }
  return ParseScaled(t, out) && *out >= 0;
}

bool ParseBool(const std::string& text, bool* out) {
  const std::string t = Lower(text);
  if (t == "true" || t == "yes" || t == "on" || t == "1") {
    *out = true;
    return true;
  }
  if (t == "false" || t == "no" || t == "off" || t == "0") {
    *out = false;
    return true;
  }
  return false;
}

// "daily", "weekly", "7d", "2w", "12h", "6 months", "1y" → days.
bool ParseIntervalDays(const std::string& text, double* out) {
  const std::string t = Lower(text);
  static const struct {
    const char* word;
    double days;
  } kWords[] = {{"hourly", 1.0 / 24}, {"daily", 1},    {"weekly", 7},  {"monthly", 30.44},
                {"quarterly", 91},    {"yearly", 365}, {"never", 3650}};
  for (const auto& w : kWords) {
    if (t == w.word) {
      *out = w.days;
      return true;
    }
  }
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end == t.c_str() || !std::isfinite(v) || v <= 0) return false;
  std::string u(end);
  u.erase(std::remove_if(u.begin(), u.end(), [](char c) { return std::isspace(c) != 0; }), u.end());
  if (u == "h" || u == "hours")
    *out = v / 24;
  else if (u.empty() || u == "d" || u == "days")
    *out = v;
  else if (u == "w" || u == "weeks")
    *out = v * 7;
  else if (u == "mo" || u == "months")
    *out = v * 30.44;
  else if (u == "y" || u == "years")
    *out = v * 365;
  else
    return false;
  return true;
}

double TypicalPriceUsd(const HardwareProfile& hw) {
  if (hw.price_usd > 0) return hw.price_usd;
  const std::string& device_class = hw.device_class;
  // Rough 2026 street prices of a complete box of each class: an assumption,
  // always printed as such; give box_price for a real quote.
  if (device_class == "embedded-soc") return 800;
  if (device_class == "mini-pc") return 1500;
  if (device_class == "edge-gpu") return 6000;
  if (device_class == "rack-gpu") return 40000;
  return 2000;
}

std::string Usd(double v) {
  if (v >= 1e6) return FormatNumber("$%.2fM", v / 1e6);
  if (v >= 1e4) return FormatNumber("$%.0fk", v / 1e3);
  if (v >= 100) return FormatNumber("$%.0f", v);
  return FormatNumber("$%.2f", v);
}

std::string Count(double v) {
  if (v >= 1e9) return FormatNumber("%.3gB", v / 1e9);
  if (v >= 1e6) return FormatNumber("%.3gM", v / 1e6);
  if (v >= 1e4) return FormatNumber("%.3gk", v / 1e3);
  return FormatNumber("%.0f", v);
}

Status Bad(const std::string& key, const std::string& val, const std::string& expected) {
  return Status::InvalidArgument("'" + key + "': '" + val + "' is not " + expected, key);
}

}  // namespace

const char* PlacementName(Placement p) {
  switch (p) {
    case Placement::kCloud:
      return "cloud";
    case Placement::kOnPremises:
      return "on-premises";
    case Placement::kEdge:
      return "edge";
    case Placement::kHybrid:
      return "hybrid";
    case Placement::kNone:
      break;
  }
  return "none";
}

const char* DataBoundaryName(DataBoundary b) {
  switch (b) {
    case DataBoundary::kDevice:
      return "device";
    case DataBoundary::kSite:
      return "site";
    case DataBoundary::kOrganisation:
      return "organisation";
    case DataBoundary::kNone:
      break;
  }
  return "none";
}

StatusOr<DataBoundary> ParseDataBoundary(const std::string& s) {
  const std::string t = Lower(s);
  if (t == "none" || t == "public") return DataBoundary::kNone;
  if (t == "organisation" || t == "organization" || t == "org") return DataBoundary::kOrganisation;
  if (t == "site") return DataBoundary::kSite;
  if (t == "device") return DataBoundary::kDevice;
  return Bad("data_boundary", s, "one of device, site, organisation, none");
}

// A response budget, round trip or first-token time beyond a day is no
// latency question; the cap also keeps every derived number finite.
constexpr int64_t kMaxAdviseDurationMs = 24LL * 3600 * 1000;

Status SetAdviseField(AdviseWorkload* w, const std::string& key, const std::string& val) {
  double d = 0;
  bool b = false;
  auto duration = [&](double* field) -> Status {
    auto ms = util::ParseDurationMs(val);
    if (!ms.ok() || *ms < 0) return Bad(key, val, "a duration (e.g. 150ms, 2s)");
    if (*ms > kMaxAdviseDurationMs) return Bad(key, val, "a duration up to 24h");
    *field = static_cast<double>(*ms);
    return Status::Ok();
  };
  if (key == "name") {
    w->name = val;
  } else if (key == "response_budget") {
    auto st = duration(&w->response_budget_ms);
    if (!st.ok()) return st;
    if (w->response_budget_ms <= 0) return Bad(key, val, "a positive duration (e.g. 150ms)");
  } else if (key == "cloud_rtt") {
    return duration(&w->cloud_rtt_ms);
  } else if (key == "cloud_ttft") {
    return duration(&w->cloud_ttft_ms);
  } else if (key == "network") {
    const std::string t = Lower(val);
    if (t != "reliable" && t != "unreliable") return Bad(key, val, "reliable or unreliable");
    w->network_reliable = t == "reliable";
  } else if (key == "speed") {
    std::string t = Lower(val);
    const size_t at = t.find("km/h");
    if (at != std::string::npos) t.erase(at);
    char* end = nullptr;
    d = std::strtod(t.c_str(), &end);
    while (end && std::isspace(static_cast<unsigned char>(*end))) ++end;
    if (t.empty() || (end && *end) || !std::isfinite(d) || d < 0 || d > 1e5)
      return Bad(key, val, "a speed (e.g. 100km/h)");
    w->speed_kmh = d;
  } else if (key == "data_boundary") {
    auto v = ParseDataBoundary(val);
    if (!v.ok()) return v.status();
    w->boundary = *v;
  } else if (key == "model_size") {
    if (!ParseScaled(val, &d) || d <= 0 || d > 1e13)
      return Bad(key, val, "a parameter count up to 10T (e.g. 3B, 270M)");
    w->model_params = d;
  } else if (key == "easy_share") {
    if (!ParseShare(val, &w->easy_share)) return Bad(key, val, "a share between 0 and 100%");
  } else if (key == "local_model_size") {
    if (!ParseScaled(val, &d) || d <= 0 || d > 1e13)
      return Bad(key, val, "a parameter count up to 10T (e.g. 3B)");
    w->local_model_params = d;
  } else if (key == "requests_per_day") {
    if (!ParseScaled(val, &d) || d <= 0 || d > 1e12)
      return Bad(key, val, "a positive count up to 1000B (e.g. 5000, 2M)");
    w->requests_per_day = d;
  } else if (key == "tokens_per_request") {
    if (!ParseScaled(val, &d) || d <= 0 || d > 1e9)
      return Bad(key, val, "a positive token count up to 1B");
    w->tokens_per_request = d;
  } else if (key == "cloud_price") {
    if (!ParseUsd(val, &d) || d > 1e9)
      return Bad(key, val, "a price in USD per million tokens (e.g. 0.60)");
    w->cloud_usd_per_mtok = d;
  } else if (key == "box_price") {
    if (!ParseUsd(val, &d) || d <= 0 || d > 1e9) return Bad(key, val, "a positive price in USD");
    w->box_usd = d;
  } else if (key == "box_lifetime") {
    // A bare number is years; otherwise an interval ("4y", "48mo").
    char* end = nullptr;
    d = std::strtod(val.c_str(), &end);
    const bool bare = !val.empty() && end != val.c_str() && *end == '\0';
    if (bare) {
      d *= 365;
    } else if (!ParseIntervalDays(val, &d)) {
      d = 0;
    }
    if (!std::isfinite(d) || d < 30 || d > 50 * 365)
      return Bad(key, val, "a lifetime from a month to 50 years (e.g. 4y)");
    w->box_lifetime_years = d / 365;
  } else if (key == "power_price") {
    if (!ParseUsd(val, &d) || d > 1e6) return Bad(key, val, "a price in USD per kWh (e.g. 0.20)");
    w->power_usd_per_kwh = d;
  } else if (key == "utilisation" || key == "utilization") {
    if (!ParseShare(val, &d) || d <= 0) return Bad(key, val, "a share above 0 and up to 100%");
    w->utilisation = d;
  } else if (key == "update_interval") {
    if (!ParseIntervalDays(val, &d) || d > 3650)
      return Bad(key, val, "an interval up to 10 years (daily, weekly, 14d, 6mo)");
    w->update_interval_days = d;
  } else if (key == "remote_updates") {
    if (!ParseBool(val, &b)) return Bad(key, val, "true or false");
    w->remote_updates = b;
  } else if (key == "large_downloads") {
    if (!ParseBool(val, &b)) return Bad(key, val, "true or false");
    w->large_downloads = b;
  } else if (key == "offline") {
    if (!ParseBool(val, &b)) return Bad(key, val, "true or false");
    w->offline_required = b;
  } else {
    return Status::InvalidArgument(
        "unknown key '" + key +
            "' (keys: name, response_budget, cloud_rtt, cloud_ttft, network, speed, "
            "data_boundary, model_size, easy_share, local_model_size, requests_per_day, "
            "tokens_per_request, "
            "cloud_price, box_price, box_lifetime, power_price, utilisation, update_interval, "
            "remote_updates, large_downloads, offline)",
        key);
  }
  return Status::Ok();
}

StatusOr<AdviseWorkload> LoadAdviseWorkload(const std::string& path) {
  auto loaded = LoadYamlFile(path, "workload", "workload");
  if (!loaded.ok()) return loaded.status();
  const YAML::Node root = *loaded;
  if (!root.IsMap()) return Status::InvalidArgument(path + ": expected a mapping", "workload");
  AdviseWorkload w;
  for (const auto& kv : root) {
    if (!kv.first.IsScalar())
      return Status::InvalidArgument(path + ": keys must be plain names", "workload");
    const std::string key = kv.first.as<std::string>();
    if (!kv.second.IsScalar())
      return Status::InvalidArgument(path + ": '" + key + "' must be a single value", key);
    auto st = SetAdviseField(&w, key, kv.second.as<std::string>());
    if (!st.ok()) return Status::InvalidArgument(path + ": " + st.message(), st.param());
  }
  return w;
}

ModelSpec TypicalModel(double params) {
  // Llama 3.x / Qwen 2.5 shapes: grouped-query attention with 8 KV heads.
  int32_t layers = 16, kv_heads = 8, head_dim = 64;
  if (params > 1.5e9) layers = 28, head_dim = 128;
  if (params > 4.5e9) layers = 32;
  if (params > 15e9) layers = 48;
  if (params > 40e9) layers = 80;
  if (params > 100e9) layers = 126;
  const std::string name = "a typical " + Count(params) + "-parameter model at Q4_K_M";
  auto m = DescribeModel(name, params, 4.8, layers, kv_heads, head_dim);
  return m.ok() ? *m : ModelSpec{};
}

double CloudUsdPerMonth(const AdviseWorkload& w, double requests_per_day) {
  return requests_per_day * kDaysPerMonth * w.tokens_per_request * w.cloud_usd_per_mtok / 1e6;
}

double BoxUsdPerMonth(const AdviseWorkload& w, double box_usd, double power_w) {
  return box_usd / (w.box_lifetime_years * 12) +
         power_w * kHoursPerMonth / 1000 * w.power_usd_per_kwh;
}

double LocalUsdPerMonth(const AdviseWorkload& w, double requests_per_day, double box_usd_per_month,
                        double capacity_tokens_per_day) {
  if (capacity_tokens_per_day <= 0) return 0;
  const double boxes = std::max(
      1.0, std::ceil(requests_per_day * w.tokens_per_request / capacity_tokens_per_day - 1e-9));
  return boxes * box_usd_per_month;
}

double SplitUsdPerMonth(const AdviseWorkload& w, double requests_per_day, double local_share,
                        double box_usd_per_month, double capacity_tokens_per_day) {
  return LocalUsdPerMonth(w, requests_per_day * local_share, box_usd_per_month,
                          capacity_tokens_per_day) +
         CloudUsdPerMonth(w, requests_per_day * (1 - local_share));
}

Advice Advise(const AdviseWorkload& w, const ModelSpec& model,
              const std::vector<HardwareProfile>& hardware, const Workload& serving,
              const Calibration& cal) {
  Advice a;
  a.workload = w;
  a.model = model;
  const std::vector<HardwareProfile>& hws = hardware.empty() ? BuiltinProfiles() : hardware;
  auto evaluate = [&](const ModelSpec& m) {
    std::vector<LocalCandidate> out;
    for (const auto& hw : hws) {
      LocalCandidate c;
      c.plan = Plan(m, hw, serving, cal);
      c.passes =
          c.plan.fit.fits && c.plan.speed.meets_budget && c.plan.concurrency.meets_budget_at_peak;
      c.price_assumed = w.box_usd <= 0;
      c.box_usd = c.price_assumed ? TypicalPriceUsd(hw) : w.box_usd;
      c.capacity_tokens_per_day = c.plan.concurrency.at_peak.aggregate_tps * 86400 * w.utilisation;
      out.push_back(std::move(c));
    }
    return out;
  };
  a.candidates = evaluate(model);
  a.local_model = model;
  bool edge_hardware = false, rack_only = false;
  std::string edge_names, rack_names;
  for (const auto& c : a.candidates) {
    if (!c.passes) continue;
    if (c.plan.hardware.device_class == "rack-gpu") {
      rack_names += (rack_names.empty() ? "" : ", ") + c.plan.hardware.name;
    } else {
      edge_hardware = true;
      edge_names += (edge_names.empty() ? "" : ", ") + c.plan.hardware.name;
    }
  }
  rack_only = !edge_hardware && !rack_names.empty();
  // A split: the needed model fits no edge box and most requests are easy —
  // the boxes run a small model for those, the cloud answers the rest.
  if (!edge_hardware && w.easy_share >= kEasyShareForHybrid) {
    a.local_model = TypicalModel(std::min(w.local_model_params, w.model_params));
    a.candidates = evaluate(a.local_model);
    a.cost.local_share = w.easy_share;
  }
  // The cheapest passing candidate at this volume.
  double best = 0;
  for (const auto& c : a.candidates) {
    if (!c.passes) continue;
    const double cost = SplitUsdPerMonth(w, w.requests_per_day, a.cost.local_share,
                                         BoxUsdPerMonth(w, c.box_usd, c.plan.hardware.power_w),
                                         c.capacity_tokens_per_day);
    if (a.chosen == nullptr || cost < best) {
      a.chosen = &c;
      best = cost;
    }
  }

  // 1. Immediacy.
  RuleResult r1{1, "Immediacy", Placement::kNone, false, ""};
  const double cloud_start = w.cloud_rtt_ms + w.cloud_ttft_ms;
  const std::string cloud_start_text = FormatNumber("%.0f ms", cloud_start) + " (" +
                                       FormatNumber("%.0f ms", w.cloud_rtt_ms) + " round trip + " +
                                       FormatNumber("%.0f ms", w.cloud_ttft_ms) +
                                       " to the cloud model's first token)";
  std::string moving;
  if (w.speed_kmh > 0) {
    moving = FormatNumber("; at %.0f km/h", w.speed_kmh) +
             FormatNumber(" a vehicle travels %.1f m", w.speed_kmh / 3.6 * cloud_start / 1000) +
             " before the answer starts";
  }
  if (!w.network_reliable) {
    r1.decides = Placement::kEdge;
    r1.hard = true;
    r1.why = "the network cannot be trusted, and every cloud answer depends on it" + moving;
  } else if (cloud_start > w.response_budget_ms) {
    r1.decides = Placement::kEdge;
    r1.hard = true;
    r1.why = "a cloud answer starts after " + cloud_start_text + ", over the " +
             FormatNumber("%.0f ms", w.response_budget_ms) + " budget" + moving;
  } else {
    r1.why = "a cloud answer starts after " + cloud_start_text + ", within the " +
             FormatNumber("%.0f ms", w.response_budget_ms) + " budget" + moving;
  }
  if (a.chosen != nullptr) {
    r1.why += FormatNumber("; locally the first token comes after about %.0f ms",
                           a.chosen->plan.speed.ttft_ms) +
              " on " + a.chosen->plan.hardware.name;
  }
  a.rules.push_back(r1);

  // 2. Data boundary.
  RuleResult r2{2, "Data boundary", Placement::kNone, false, ""};
  switch (w.boundary) {
    case DataBoundary::kDevice:
      r2 = {2, "Data boundary", Placement::kEdge, true,
            "the data may not leave the device: the model runs on it"};
      break;
    case DataBoundary::kSite:
      r2 = {2, "Data boundary", Placement::kEdge, true,
            "the data may not leave the site: a box at the site serves it"};
      break;
    case DataBoundary::kOrganisation:
      r2 = {2, "Data boundary", Placement::kOnPremises, true,
            "the data may not leave the organisation: its own servers, never a public cloud"};
      break;
    case DataBoundary::kNone:
      r2.why = "no boundary on where the data may go";
      break;
  }
  a.rules.push_back(r2);

  // 3. Required intelligence.
  RuleResult r3{3, "Required intelligence", Placement::kNone, false, ""};
  const std::string need = "the task needs " + model.name + " (" +
                           FormatNumber("%.1f GB of weights", model.weight_bytes / 1e9) + ")";
  if (edge_hardware) {
    r3.why = need + ", and edge hardware passes all three gates for it (" + edge_names +
             "): a focused task fits a small quantized model";
  } else {
    const std::string where =
        rack_only ? "only data-centre GPUs pass the three gates for it (" + rack_names + ")"
                  : "no candidate hardware passes the three gates for it";
    if (w.easy_share >= kEasyShareForHybrid) {
      r3.decides = Placement::kHybrid;
      r3.why = need + "; " + where + ", but " + FormatNumber("%.0f%%", w.easy_share * 100) +
               " of requests are easy: " + a.local_model.name +
               " answers those locally, the rest go central";
    } else {
      r3.decides = Placement::kCloud;
      r3.why = need + "; " + where +
               (rack_only ? ": the cloud, or on-premises servers where the data must stay"
                          : ": the cloud");
    }
  }
  a.rules.push_back(r3);

  // 4. Scale and cost.
  RuleResult r4{4, "User scale and cost", Placement::kNone, false, ""};
  CostModel& cm = a.cost;
  cm.cloud_usd_per_month = CloudUsdPerMonth(w, w.requests_per_day);
  if (a.chosen == nullptr) {
    r4.why = "the cloud costs " + Usd(cm.cloud_usd_per_month) + "/month at " +
             Count(w.requests_per_day) +
             " requests/day; no candidate box passes the gates, so there is no box to compare";
    r4.decides = Placement::kCloud;
  } else {
    const LocalCandidate& c = *a.chosen;
    cm.box = c.plan.hardware.name;
    cm.power_usd_per_month = BoxUsdPerMonth(w, 0, c.plan.hardware.power_w);
    cm.box_usd_per_month = BoxUsdPerMonth(w, c.box_usd, c.plan.hardware.power_w);
    const double share = cm.local_share;
    const double boxes = std::ceil(
        w.requests_per_day * share * w.tokens_per_request / c.capacity_tokens_per_day - 1e-9);
    cm.boxes = static_cast<int>(std::clamp(boxes, 1.0, 1e9));
    cm.local_usd_per_month = SplitUsdPerMonth(w, w.requests_per_day, share, cm.box_usd_per_month,
                                              c.capacity_tokens_per_day);
    // The cloud's cost of one box's full capacity against the box: if higher,
    // the lines cross inside the first box's range and never again.
    const double cloud_per_request =
        kDaysPerMonth * w.tokens_per_request * w.cloud_usd_per_mtok / 1e6 * share;
    const double box_capacity_requests = c.capacity_tokens_per_day / w.tokens_per_request / share;
    if (cloud_per_request > 0 && cm.box_usd_per_month / cloud_per_request <= box_capacity_requests)
      cm.crossover_requests_per_day = cm.box_usd_per_month / cloud_per_request;
    const std::string local = std::to_string(cm.boxes) + " x " + cm.box + " (" + Usd(c.box_usd) +
                              (c.price_assumed ? " assumed typical price" : "") + " over " +
                              FormatNumber("%.0f years", w.box_lifetime_years) + ", power " +
                              Usd(cm.power_usd_per_month * cm.boxes) + "/month)" +
                              (share < 1 ? FormatNumber(" for the easy %.0f%%", share * 100) +
                                               " plus the cloud for the rest"
                                         : "");
    const std::string prices = "the cloud costs " + Usd(cm.cloud_usd_per_month) + "/month at " +
                               Count(w.requests_per_day) + " requests/day x " +
                               Count(w.tokens_per_request) + " tokens; " + local + " cost " +
                               Usd(cm.local_usd_per_month) + "/month";
    const std::string cross =
        cm.crossover_requests_per_day > 0
            ? "; the box is cheaper above " + Count(cm.crossover_requests_per_day) + " requests/day"
            : "; at this price per token the box never gets cheaper";
    r4.why = prices + cross;
    const double lo = std::min(cm.cloud_usd_per_month, cm.local_usd_per_month);
    const double hi = std::max(cm.cloud_usd_per_month, cm.local_usd_per_month);
    if (hi > 0 && (hi - lo) / hi > kCostTie) {
      const Placement local_wins = share < 1 ? Placement::kHybrid : Placement::kEdge;
      r4.decides = cm.local_usd_per_month < cm.cloud_usd_per_month ? local_wins : Placement::kCloud;
    } else {
      r4.why += " (within 10%: cost does not decide)";
    }
  }
  a.rules.push_back(r4);

  // 5. Update frequency.
  RuleResult r5{5, "Update frequency", Placement::kNone, false, ""};
  const std::string every = w.update_interval_days < 1
                                ? FormatNumber("every %.0f hours", w.update_interval_days * 24)
                                : FormatNumber("every %.0f days", w.update_interval_days);
  if (w.update_interval_days < 1) {
    r5.decides = Placement::kCloud;
    r5.why = "the model changes " + every + ": only the cloud keeps up";
  } else if (!w.large_downloads) {
    r5.decides = Placement::kCloud;
    r5.why = "the site's link cannot take a " + FormatNumber("%.1f GB", model.weight_bytes / 1e9) +
             " model download: cloud fixes reach everyone the same day";
  } else if (!w.remote_updates && w.update_interval_days <= 31) {
    r5.decides = Placement::kCloud;
    r5.why = "the model changes " + every +
             " and there is no remote update path: devices would lag by weeks";
  } else {
    r5.why = "the model changes " + every +
             (w.remote_updates
                  ? "; verified remote updates (pull, canary, rollback) bring a box up to date "
                    "within hours"
                  : "; rarely enough for updates by hand");
  }
  a.rules.push_back(r5);

  // 6. Offline.
  RuleResult r6{6, "Offline", Placement::kNone, false, ""};
  if (w.offline_required) {
    r6 = {6, "Offline", Placement::kEdge, true,
          "the function must keep working with no connection: it runs on the device or an edge "
          "box"};
  } else {
    r6.why = "no need to work offline";
  }
  a.rules.push_back(r6);

  // Combination.
  const bool edge_hard = r1.hard || r6.hard || w.boundary == DataBoundary::kDevice ||
                         w.boundary == DataBoundary::kSite;
  const bool needs_central = r3.decides == Placement::kCloud || r3.decides == Placement::kHybrid;
  if (w.boundary != DataBoundary::kNone) {
    a.verdict = w.boundary == DataBoundary::kOrganisation && !edge_hard ? Placement::kOnPremises
                                                                        : Placement::kEdge;
    a.summary =
        std::string("the data boundary (") + DataBoundaryName(w.boundary) + ") rules out the cloud";
    // An organisation's own servers may be data-centre GPUs; a device or site
    // needs an edge box.
    const bool holds = w.boundary == DataBoundary::kOrganisation
                           ? edge_hardware || !rack_names.empty()
                           : edge_hardware;
    if (!holds)
      a.summary +=
          "; but no candidate hardware passes the three gates for the model the task needs: "
          "choose bigger hardware (`outpost plan --hardware ...`) or a smaller model";
  } else if (edge_hard) {
    const std::string why = r1.hard   ? "immediacy"
                            : r6.hard ? "offline operation"
                                      : "the data boundary";
    if (needs_central) {
      a.verdict = Placement::kHybrid;
      a.summary = why +
                  " keeps the first answer local, and the task needs a bigger model than "
                  "the box holds for the rest: local first, central for the hard part";
    } else {
      a.verdict = Placement::kEdge;
      a.summary = why + " needs the model on the device or an edge box, and it fits there";
    }
  } else if (r3.decides == Placement::kHybrid) {
    a.verdict = Placement::kHybrid;
    a.summary =
        "most requests are easy enough for a small local model; the hard ones need a "
        "bigger one centrally";
  } else {
    Placement vote = Placement::kNone;
    bool split = false;
    std::string voters;
    for (const RuleResult* r : {&r3, &r4, &r5}) {
      if (r->decides == Placement::kNone) continue;
      voters += (voters.empty() ? "" : " and ") + r->question;
      if (vote == Placement::kNone)
        vote = r->decides;
      else if (vote != r->decides)
        split = true;
    }
    if (vote == Placement::kNone || split) {
      a.verdict = Placement::kHybrid;
      a.summary = split ? "no rule requires a place, and " + voters +
                              " disagree, so hybrid: the safe default"
                        : "no rule settles it, so hybrid: the safe default";
    } else {
      a.verdict = vote;
      a.summary = "no rule requires a place, and " + voters + " point to " + PlacementName(vote);
    }
  }
  return a;
}

std::string HybridRoutingYaml(const Advice& a) {
  const AdviseWorkload& w = a.workload;
  std::string o;
  o += "# Starting routing file for '" + w.name + "', written by `outpost plan --advise`\n";
  o += std::string("# (verdict: ") + PlacementName(a.verdict) + "). Set the central URL and key,\n";
  o += "# then: outpost serve --model LOCAL.gguf --routing-file THIS_FILE (docs/routing.md).\n";
  o += "upstreams:\n";
  o += "  - name: central\n";
  o += "    kind: central\n";
  o += "    url: https://central.example.com   # any OpenAI-compatible endpoint (vLLM, "
       "llama-server, Outpost)\n";
  o += "    api_key: \"\"\n";
  o += "    models: [\"*\"]\n";
  o += "    first_byte_timeout: " +
       std::to_string(static_cast<long>(std::max(1000.0, w.response_budget_ms * 4))) + "ms\n";
  o += "\npolicy:\n";
  o += "  # Restricted data never leaves this box; mark tenants or requests restricted\n";
  o += "  # (X-Data-Class: restricted) to keep them local.\n";
  o += "  restricted_scope: node\n";
  o += "  default_data_class: internal\n";
  o += "  aliases: {large: central}        # model \"large\" always goes central\n";
  o += "  # Difficulty: long documents and tool use go to the bigger central model.\n";
  o += "  max_local_prompt_tokens: 2048\n";
  o += "  tools_go_central: true\n";
  o += "  # Load: past the local queue's budget, hand over instead of waiting.\n";
  o += "  overflow_to_peer: true\n";
  o += "  overflow_to_central: true\n";
  o += "  latency_budget: " + std::to_string(static_cast<long>(w.response_budget_ms)) + "ms\n";
  if (w.easy_share > 0) {
    o += "  # " + FormatNumber("%.0f%%", w.easy_share * 100) +
         " of requests are easy: answer locally, and send an answer the\n"
         "  # local model is unsure of (low mean log-probability) to central.\n";
    o += "  confidence_cascade:\n    min_mean_logprob: -1.5\n";
  }
  if (w.offline_required || !w.network_reliable)
    o += "# When central is unreachable, requests are answered locally (the router's fallback).\n";
  return o;
}

}  // namespace outpost::planner

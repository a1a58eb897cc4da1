#include "outpost/telemetry/prometheus_text.h"

#include <cmath>
#include <cstdio>

namespace outpost::telemetry {
namespace {

// Whole numbers exactly (byte counts, clocks: 10737418240, not 1.07e+10),
// others to 15 significant digits (0.05 stays 0.05).
std::string Num(double v) {
  char buf[64];
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9007199254740992.0) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.15g", v);
  }
  return buf;
}

// Label values escaped as the format requires: backslash, quote, newline.
std::string Escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

// {a="x",b="y"} with an optional extra label (le for buckets); "" when empty.
// A label whose value is empty is left out: to Prometheus the two are the same
// series (a file-served model has no store version; a successful request no
// error_type, as OpenTelemetry sets error.type only on errors).
std::string Labels(const std::vector<std::string>& names, const LabelValues& values,
                   const std::string& extra = {}) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (values[i].empty()) continue;
    out += out.empty() ? "{" : ",";
    out += names[i] + "=\"" + Escape(values[i]) + "\"";
  }
  if (!extra.empty()) out += (out.empty() ? "{" : ",") + extra;
  return out.empty() ? out : out + "}";
}

const char* TypeName(StatType t) {
  switch (t) {
    case StatType::kCounter:
      return "counter";
    case StatType::kGauge:
      return "gauge";
    case StatType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

}  // namespace

std::string PrometheusText(const std::vector<StatRegistry::FamilySnapshot>& snapshot) {
  std::string out;
  for (const auto& f : snapshot) {
    const StatDef& d = f.def;
    out += "# HELP " + d.name + " " + d.help + "\n";
    out += "# TYPE " + d.name + " " + TypeName(d.type) + "\n";
    for (const auto& s : f.series) {
      if (d.type != StatType::kHistogram) {
        out += d.name + Labels(d.label_names, s.labels) + " " + Num(s.value) + "\n";
        continue;
      }
      const HistogramSnapshot& h = s.hist;
      for (size_t i = 0; i < h.bounds.size(); ++i) {
        out += d.name + "_bucket" +
               Labels(d.label_names, s.labels, "le=\"" + Num(h.bounds[i]) + "\"") + " " +
               std::to_string(h.cumulative[i]) + "\n";
      }
      out += d.name + "_bucket" + Labels(d.label_names, s.labels, "le=\"+Inf\"") + " " +
             std::to_string(h.count) + "\n";
      out += d.name + "_sum" + Labels(d.label_names, s.labels) + " " + Num(h.sum) + "\n";
      out += d.name + "_count" + Labels(d.label_names, s.labels) + " " + std::to_string(h.count) +
             "\n";
    }
  }
  return out;
}

}  // namespace outpost::telemetry

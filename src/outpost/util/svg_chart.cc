#include "outpost/util/svg_chart.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

namespace outpost::util {
namespace {

constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c",
                                   "#ff7f0e", "#9467bd", "#8c564b"};
constexpr double kWidth = 720, kHeight = 400;
constexpr double kLeft = 72, kRight = 24, kBottom = 56;
constexpr double kCharWidth = 6.6;  // average width of an 11px sans-serif glyph

std::atomic<int> next_chart_id{0};

// Decimals needed to write `step` exactly (up to 6).
int DecimalsFor(double step) {
  step = std::fabs(step);
  for (int d = 0; d < 6; ++d) {
    const double scaled = step * std::pow(10.0, d);
    if (std::fabs(scaled - std::round(scaled)) < 1e-6 * std::max(1.0, scaled)) return d;
  }
  return 6;
}

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

struct Scale {
  double lo = 0, hi = 1;
  bool log = false;
  double px_lo = 0, px_hi = 1;
  // Pixel of a value; NaN when the value cannot be drawn on this scale.
  double operator()(double v) const {
    if (!std::isfinite(v) || (log && v <= 0)) return std::numeric_limits<double>::quiet_NaN();
    const double t = log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo))
                         : (v - lo) / (hi - lo);
    return px_lo + t * (px_hi - px_lo);
  }
};

// Ticks and range for one axis over the finite (and, for log, positive) values.
std::vector<double> AxisTicks(const std::vector<double>& values, bool log, bool from_zero,
                              int target) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double v : values) {
    if (!std::isfinite(v) || (log && v <= 0)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (!std::isfinite(lo)) {
    lo = log ? 1 : 0;
    hi = log ? 10 : 1;
  }
  if (log) return LogTicks(lo, hi);
  if (from_zero) {
    lo = std::min(lo, 0.0);
    hi = std::max(hi, 0.0);
  }
  return NiceTicks(lo, hi, target);
}

}  // namespace

std::vector<double> NiceTicks(double lo, double hi, int target) {
  if (!(hi > lo)) {
    const double pad = lo == 0 ? 1 : std::fabs(lo) * 0.5;
    lo -= lo == 0 ? 0 : pad;
    hi += pad;
  }
  target = std::max(target, 1);
  const double raw = (hi - lo) / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * mag;
  for (double m : {1.0, 2.0, 2.5, 5.0}) {
    if (m * mag >= raw * (1 - 1e-9)) {
      step = m * mag;
      break;
    }
  }
  std::vector<double> ticks;
  const double first = std::floor(lo / step + 1e-9) * step;
  for (int i = 0; i < 1000; ++i) {
    double t = first + i * step;
    if (std::fabs(t) < step * 1e-9) t = 0;
    ticks.push_back(t);
    if (t >= hi - step * 1e-9) break;
  }
  return ticks;
}

std::vector<double> LogTicks(double lo, double hi) {
  if (!(lo > 0)) lo = 1;
  if (!(hi > lo)) hi = lo * 10;
  std::vector<double> ticks;
  const int first = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
  int last = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
  if (last <= first) last = first + 1;
  for (int e = first; e <= last; ++e) ticks.push_back(std::pow(10.0, e));
  return ticks;
}

std::string TickLabel(double v, double step) {
  if (std::fabs(v) < std::fabs(step) * 1e-9) return "0";
  static const struct {
    double div;
    const char* suffix;
  } kSi[] = {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}, {1, ""}};
  double div = 1;
  const char* suffix = "";
  for (const auto& s : kSi) {
    if (std::fabs(v) >= s.div * (1 - 1e-9)) {
      div = s.div;
      suffix = s.suffix;
      break;
    }
  }
  const int decimals = DecimalsFor(step / div);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v / div);
  std::string out = buf;
  if (out.find('.') != std::string::npos) {
    while (out.back() == '0') out.pop_back();
    if (out.back() == '.') out.pop_back();
  }
  return out + suffix;
}

std::string SiNumber(double v) {
  if (v == 0 || !std::isfinite(v)) return TickLabel(v, 1);
  const double a = std::fabs(v);
  const double div = a >= 1e12 ? 1e12 : a >= 1e9 ? 1e9 : a >= 1e6 ? 1e6 : a >= 1e3 ? 1e3 : 1;
  const double step = std::pow(10.0, std::floor(std::log10(a / div)) - 2) * div;
  return TickLabel(std::round(v / step) * step, step);
}

std::string HtmlEscape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '&':
        o += "&amp;";
        break;
      case '"':
        o += "&quot;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

std::string SvgLineChart(const LineChart& chart) {
  const int id = next_chart_id.fetch_add(1);
  // Legend rows above the plot: items flow left to right and wrap.
  struct Item {
    double x, y;
    size_t k;
  };
  std::vector<Item> legend;
  double lx = kLeft, ly = 44;
  for (size_t k = 0; k < chart.series.size(); ++k) {
    const double w = 28 + kCharWidth * chart.series[k].label.size() + 18;
    if (lx + w > kWidth - kRight && lx > kLeft) {
      lx = kLeft;
      ly += 18;
    }
    legend.push_back({lx, ly, k});
    lx += w;
  }
  const double top = ly + 20;
  const double bottom = kHeight - kBottom;

  std::vector<double> all_y;
  for (const auto& s : chart.series) all_y.insert(all_y.end(), s.ys.begin(), s.ys.end());
  std::vector<double> xvals = chart.xs;
  for (const auto& m : chart.markers) xvals.push_back(m.x);
  std::vector<double> xt = AxisTicks(xvals, chart.x.log, false, 8);
  // Counts (sessions) get whole-number ticks.
  const bool whole = std::all_of(xvals.begin(), xvals.end(),
                                 [](double v) { return !std::isfinite(v) || v == std::floor(v); });
  if (whole && !chart.x.log && xt.size() > 1 && xt[1] - xt[0] < 1) {
    std::vector<double> ints;
    for (double v = std::floor(xt.front()); v <= std::ceil(xt.back()); ++v) ints.push_back(v);
    xt = ints;
  }
  const std::vector<double> yt = AxisTicks(all_y, chart.y.log, true, 5);
  const Scale X{xt.front(), xt.back(), chart.x.log, kLeft, kWidth - kRight};
  const Scale Y{yt.front(), yt.back(), chart.y.log, bottom, top};
  const double xstep = xt.size() > 1 ? xt[1] - xt[0] : 1;
  const double ystep = yt.size() > 1 ? yt[1] - yt[0] : 1;

  std::ostringstream o;
  o << "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " << kWidth << " "
    << kHeight << "\" width=\"100%\" style=\"max-width:" << kWidth
    << "px;height:auto\" font-family=\"sans-serif\" font-size=\"11\" role=\"img\" aria-label=\""
    << HtmlEscape(chart.title) << "\">\n"
    << "<defs><clipPath id=\"plot" << id << "\"><rect x=\"" << kLeft << "\" y=\"" << Num(top)
    << "\" width=\"" << kWidth - kRight - kLeft << "\" height=\"" << Num(bottom - top)
    << "\"/></clipPath></defs>\n"
    << "<text x=\"" << kWidth / 2
    << "\" y=\"20\" text-anchor=\"middle\" font-size=\"14\" "
       "font-weight=\"bold\">"
    << HtmlEscape(chart.title) << "</text>\n";

  // Grid and ticks.
  o << "<g class=\"axes\" stroke=\"#ddd\">\n";
  for (double v : yt)
    o << "<line x1=\"" << kLeft << "\" x2=\"" << kWidth - kRight << "\" y1=\"" << Num(Y(v))
      << "\" y2=\"" << Num(Y(v)) << "\"/>\n";
  for (double v : xt)
    o << "<line x1=\"" << Num(X(v)) << "\" x2=\"" << Num(X(v)) << "\" y1=\"" << Num(top)
      << "\" y2=\"" << Num(bottom) << "\"/>\n";
  o << "</g>\n<rect x=\"" << kLeft << "\" y=\"" << Num(top) << "\" width=\""
    << kWidth - kRight - kLeft << "\" height=\"" << Num(bottom - top)
    << "\" class=\"plot\" fill=\"none\" stroke=\"#333\"/>\n<g class=\"ticks\" fill=\"#333\">\n";
  for (double v : yt)
    o << "<text x=\"" << kLeft - 6 << "\" y=\"" << Num(Y(v) + 4) << "\" text-anchor=\"end\">"
      << TickLabel(v, chart.y.log ? v : ystep) << "</text>\n";
  for (double v : xt)
    o << "<text x=\"" << Num(X(v)) << "\" y=\"" << bottom + 16 << "\" text-anchor=\"middle\">"
      << TickLabel(v, chart.x.log ? v : xstep) << "</text>\n";
  o << "</g>\n<text x=\"" << (kLeft + kWidth - kRight) / 2 << "\" y=\"" << kHeight - 14
    << "\" text-anchor=\"middle\">" << HtmlEscape(chart.x.label) << "</text>\n"
    << "<text transform=\"translate(16," << Num((top + bottom) / 2)
    << ") rotate(-90)\" text-anchor=\"middle\">" << HtmlEscape(chart.y.label) << "</text>\n";

  // Lines, clipped to the plot area; a value that cannot be drawn breaks the line.
  o << "<g class=\"lines\" clip-path=\"url(#plot" << id
    << ")\" fill=\"none\" stroke-width=\"2\">\n";
  for (size_t k = 0; k < chart.series.size(); ++k) {
    const auto& s = chart.series[k];
    std::string points;
    auto flush = [&] {
      if (points.empty()) return;
      o << "<polyline stroke=\"" << kColors[k % 6] << "\""
        << (s.dashed ? " stroke-dasharray=\"6 4\"" : "") << " points=\"" << points << "\"/>\n";
      points.clear();
    };
    for (size_t i = 0; i < s.ys.size() && i < chart.xs.size(); ++i) {
      const double px = X(chart.xs[i]), py = Y(s.ys[i]);
      if (std::isnan(px) || std::isnan(py)) {
        flush();
        continue;
      }
      points += Num(px) + "," + Num(py) + " ";
    }
    flush();
  }
  o << "</g>\n";

  for (const auto& m : chart.markers) {
    const double px = X(m.x);
    if (std::isnan(px) || px < kLeft || px > kWidth - kRight) continue;
    const bool right_half = px > (kLeft + kWidth - kRight) / 2;
    o << "<g class=\"marker\"><line x1=\"" << Num(px) << "\" x2=\"" << Num(px) << "\" y1=\""
      << Num(top) << "\" y2=\"" << Num(bottom)
      << "\" stroke=\"#555\" stroke-dasharray=\"3 3\"/><text x=\""
      << Num(px + (right_half ? -4 : 4)) << "\" y=\"" << Num(top + 14) << "\" text-anchor=\""
      << (right_half ? "end" : "start") << "\" fill=\"#333\">" << HtmlEscape(m.label)
      << "</text></g>\n";
  }

  o << "<g class=\"legend\">\n";
  for (const auto& it : legend) {
    const auto& s = chart.series[it.k];
    o << "<line x1=\"" << Num(it.x) << "\" x2=\"" << Num(it.x + 22) << "\" y1=\"" << Num(it.y - 4)
      << "\" y2=\"" << Num(it.y - 4) << "\" stroke=\"" << kColors[it.k % 6]
      << "\" stroke-width=\"2\"" << (s.dashed ? " stroke-dasharray=\"6 4\"" : "") << "/><text x=\""
      << Num(it.x + 28) << "\" y=\"" << Num(it.y) << "\">" << HtmlEscape(s.label) << "</text>\n";
  }
  o << "</g>\n</svg>\n";
  return o.str();
}

}  // namespace outpost::util

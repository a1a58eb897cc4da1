// SVG line charts for the HTML reports of `outpost plan`, `plan --advise` and
// `outpost bench`. Pure; thread-safe.
//
// A chart scales to its container (viewBox, width 100%), puts its legend in a
// row above the plot area so it never covers a line, clips every line to the
// plot area, and labels its axes with round ticks (1, 2, 2.5, 5 x 10^k) written
// the way people read them ("1.5k", "2M", "0.25"), never in exponent form.
// Non-finite values break a line instead of drawing it off the chart.
#pragma once

#include <string>
#include <vector>

namespace outpost::util {

struct ChartSeries {
  std::string label;
  std::vector<double> ys;  // one per x; NaN leaves a gap
  bool dashed = false;
};

// A vertical line at `x` with a label (a crossover, a limit).
struct ChartMarker {
  double x = 0;
  std::string label;
};

struct ChartAxis {
  std::string label;  // with its unit: "sessions", "tokens/s", "USD per month"
  bool log = false;   // base-10 log scale (positive values only)
};

struct LineChart {
  std::string title;
  ChartAxis x, y;
  std::vector<double> xs;
  std::vector<ChartSeries> series;
  std::vector<ChartMarker> markers;
};

std::string SvgLineChart(const LineChart& chart);

// Round ticks covering [lo, hi]: at most about `target` + 1 of them, spaced by
// 1, 2, 2.5 or 5 x 10^k; the first <= lo and the last >= hi.
std::vector<double> NiceTicks(double lo, double hi, int target);
// Powers of ten covering [lo, hi] (lo > 0).
std::vector<double> LogTicks(double lo, double hi);
// A tick's text: SI suffixes from a thousand up (1500 → "1.5k", 2e6 → "2M"),
// as many decimals as `step` needs and no trailing zeros.
std::string TickLabel(double v, double step);

// A figure with three significant digits and an SI suffix: 1929.06 → "1.93k",
// 9932812 → "9.93M", 12.5 → "12.5".
std::string SiNumber(double v);

// <, >, & and " as entities.
std::string HtmlEscape(const std::string& s);

}  // namespace outpost::util

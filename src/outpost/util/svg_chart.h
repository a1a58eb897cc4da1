// SVG line charts and HTML escaping for the reports of `outpost plan` and
// `outpost bench` (and the benchmark sweeps). Pure; thread-safe.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace outpost::util {

// <, > and & as entities.
std::string HtmlEscape(const std::string& s);

// A line chart as an SVG element; series are (label, y values) over xs.
std::string SvgLineChart(const std::string& title, const std::string& x_label,
                         const std::string& y_label, const std::vector<double>& xs,
                         const std::vector<std::pair<std::string, std::vector<double>>>& series);

}  // namespace outpost::util

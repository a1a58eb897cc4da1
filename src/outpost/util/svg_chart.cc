#include "outpost/util/svg_chart.h"

#include <algorithm>
#include <sstream>

#include "outpost/util/units.h"

namespace outpost::util {

std::string HtmlEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '&')
      o += "&amp;";
    else
      o += c;
  }
  return o;
}

std::string SvgLineChart(const std::string& title, const std::string& x_label,
                         const std::string& y_label, const std::vector<double>& xs,
                         const std::vector<std::pair<std::string, std::vector<double>>>& series) {
  static const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};
  const double w = 640, h = 340, pad = 56;
  double ymax = 0;
  for (const auto& [_, ys] : series) {
    for (double v : ys) ymax = std::max(ymax, v);
  }
  ymax = ymax > 0 ? ymax * 1.1 : 1;
  const double xmin = xs.empty() ? 0 : xs.front(),
               xmax = xs.empty() ? 1 : std::max(xs.back(), xmin + 1);
  auto X = [&](double x) { return pad + (x - xmin) / (xmax - xmin) * (w - 2 * pad); };
  auto Y = [&](double y) { return h - pad - y / ymax * (h - 2 * pad); };
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w << "\" height=\"" << h
    << "\" font-family=\"sans-serif\" font-size=\"11\">\n"
    << "<text x=\"" << w / 2 << "\" y=\"18\" text-anchor=\"middle\" font-size=\"14\">"
    << HtmlEscape(title) << "</text>\n"
    << "<line x1=\"" << pad << "\" y1=\"" << h - pad << "\" x2=\"" << w - pad << "\" y2=\""
    << h - pad << "\" stroke=\"black\"/>\n"
    << "<line x1=\"" << pad << "\" y1=\"" << pad << "\" x2=\"" << pad << "\" y2=\"" << h - pad
    << "\" stroke=\"black\"/>\n";
  for (int i = 0; i <= 4; ++i) {
    const double v = ymax * i / 4;
    o << "<text x=\"" << pad - 4 << "\" y=\"" << Y(v) + 4 << "\" text-anchor=\"end\">"
      << FormatNumber("%.3g", v) << "</text>\n";
  }
  for (double x : xs) {
    o << "<text x=\"" << X(x) << "\" y=\"" << h - pad + 14 << "\" text-anchor=\"middle\">"
      << FormatNumber("%g", x) << "</text>\n";
  }
  o << "<text x=\"" << w / 2 << "\" y=\"" << h - 12 << "\" text-anchor=\"middle\">"
    << HtmlEscape(x_label) << "</text>\n"
    << "<text transform=\"translate(14," << h / 2 << ") rotate(-90)\" text-anchor=\"middle\">"
    << HtmlEscape(y_label) << "</text>\n";
  for (size_t k = 0; k < series.size(); ++k) {
    const auto& [label, ys] = series[k];
    o << "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" << kColors[k % 6] << "\" points=\"";
    for (size_t i = 0; i < ys.size() && i < xs.size(); ++i) o << X(xs[i]) << "," << Y(ys[i]) << " ";
    o << "\"/>\n<text x=\"" << w - pad - 150 << "\" y=\"" << pad + 14 * k << "\" fill=\""
      << kColors[k % 6] << "\">" << HtmlEscape(label) << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace outpost::util

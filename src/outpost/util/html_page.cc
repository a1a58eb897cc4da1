#include "outpost/util/html_page.h"

#include <sstream>

#include "outpost/util/svg_chart.h"

namespace outpost::util {

std::string RenderTable(const HtmlTable& t) {
  std::ostringstream o;
  auto cls = [&](size_t i) { return i < t.numeric.size() && t.numeric[i] ? " class=\"num\"" : ""; };
  o << "<table>";
  if (!t.caption.empty()) o << "<caption>" << HtmlEscape(t.caption) << "</caption>";
  o << "<thead><tr>";
  for (size_t i = 0; i < t.header.size(); ++i)
    o << "<th" << cls(i) << ">" << HtmlEscape(t.header[i]) << "</th>";
  o << "</tr></thead><tbody>\n";
  for (const auto& row : t.rows) {
    o << "<tr>";
    for (size_t i = 0; i < row.size(); ++i)
      o << "<td" << cls(i) << ">" << HtmlEscape(row[i]) << "</td>";
    o << "</tr>\n";
  }
  o << "</tbody></table>\n";
  return o.str();
}

std::string Badge(bool ok, const std::string& text) {
  return std::string("<span class=\"badge ") + (ok ? "pass" : "fail") + "\">" + HtmlEscape(text) +
         "</span>";
}

std::string HtmlPage(const std::string& title, const std::string& body) {
  std::ostringstream o;
  o << "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
    << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
    << "<title>" << HtmlEscape(title) << "</title>\n<style>\n"
    << "body{font-family:system-ui,-apple-system,'DejaVu Sans',sans-serif;max-width:960px;"
       "margin:0 auto;padding:1em 1.5em;line-height:1.45;color:#1f2328}\n"
    << "h1{font-size:1.6em;margin:.4em 0}h2{font-size:1.25em;margin:1.6em 0 .4em;"
       "border-bottom:1px solid #d0d7de;padding-bottom:.2em}h3{font-size:1.05em;margin:1.2em 0 "
       ".3em}\n"
    << "table{border-collapse:collapse;width:100%;margin:.4em 0 1.2em;font-size:.92em}\n"
    << "caption{text-align:left;font-weight:bold;padding:.3em 0}\n"
    << "th,td{padding:.3em .6em;border-bottom:1px solid #d0d7de;text-align:left;"
       "vertical-align:top;overflow-wrap:break-word}\n"
    << "th{background:#f6f8fa}th.num{text-align:right}td.num{text-align:right;"
       "font-variant-numeric:tabular-nums;white-space:nowrap}\n"
    << ".badge{display:inline-block;padding:.05em .55em;border-radius:1em;font-weight:bold;"
       "font-size:.9em}.pass{background:#dafbe1;color:#1a7f37}.fail{background:#ffebe9;"
       "color:#cf222e}\n"
    << ".cards{display:flex;flex-wrap:wrap;gap:.6em;margin:.6em 0}.card{flex:1 1 200px;"
       "border:1px solid #d0d7de;border-radius:6px;padding:.5em .8em}.card b{display:block;"
       "font-size:1.3em}\n"
    << "p.note{color:#57606a;font-size:.92em}svg.chart{display:block;margin:1em auto}\n"
    << "code,pre{font-size:.9em;background:#f6f8fa;border-radius:4px}pre{padding:.8em;"
       "overflow-x:auto;white-space:pre-wrap}\n"
    << "</style></head>\n<body>\n<h1>" << HtmlEscape(title) << "</h1>\n"
    << body << "</body></html>\n";
  return o.str();
}

}  // namespace outpost::util

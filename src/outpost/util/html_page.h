// The HTML pages of `outpost plan`, `plan --advise` and `outpost bench`: one
// stylesheet, tables, verdict badges. Pages fit the window's width (tables and
// charts shrink, long text wraps). Pure; thread-safe.
#pragma once

#include <string>
#include <vector>

namespace outpost::util {

struct HtmlTable {
  std::string caption;                         // "" for none
  std::vector<std::string> header;             // column titles
  std::vector<bool> numeric;                   // per column: right-aligned, tabular figures
  std::vector<std::vector<std::string>> rows;  // plain text; escaped when rendered
};

std::string RenderTable(const HtmlTable& t);

// A PASS / FAIL style badge: `text` in green when ok, red otherwise.
std::string Badge(bool ok, const std::string& text);

// A whole document: <title>, the shared stylesheet, an <h1> and `body`
// (already HTML).
std::string HtmlPage(const std::string& title, const std::string& body);

}  // namespace outpost::util

// Rendering of PlanReports: a terminal table, JSON, and an HTML page with SVG
// charts (tokens/s per user and aggregate vs sessions; memory vs sessions).
// Pure; thread-safe.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "outpost/planner/planner.h"

namespace outpost::planner {

std::string RenderText(const PlanReport& r);
nlohmann::json RenderJson(const PlanReport& r);
std::string RenderHtml(const std::vector<PlanReport>& reports);
// Compare mode: one row per report with the gates' verdicts and key figures.
std::string RenderComparison(const std::vector<PlanReport>& reports);
// A line chart as an SVG element; series are (label, y values) over xs.
std::string SvgLineChart(const std::string& title, const std::string& x_label,
                         const std::string& y_label, const std::vector<double>& xs,
                         const std::vector<std::pair<std::string, std::vector<double>>>& series);

}  // namespace outpost::planner

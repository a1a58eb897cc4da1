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

}  // namespace outpost::planner

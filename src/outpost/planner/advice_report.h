// Rendering of an Advice (`outpost plan --advise`): a terminal report, JSON,
// an HTML page, and the cost-crossover chart as SVG (monthly cost against
// request volume for the cloud and for the boxes, the crossover and the
// workload's volume marked). Pure; thread-safe.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "outpost/planner/advisor.h"

namespace outpost::planner {

std::string AdviceText(const Advice& a);
nlohmann::json AdviceJson(const Advice& a);
std::string AdviceHtml(const Advice& a);
std::string CostChartSvg(const Advice& a);

}  // namespace outpost::planner

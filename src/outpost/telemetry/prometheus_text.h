// Prometheus text exposition format 0.0.4 for a StatRegistry snapshot. Pure.
#pragma once

#include <string>
#include <vector>

#include "outpost/telemetry/stat_registry.h"

namespace outpost::telemetry {

std::string PrometheusText(const std::vector<StatRegistry::FamilySnapshot>& snapshot);

}  // namespace outpost::telemetry

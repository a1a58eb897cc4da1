#include "outpost/models/canary_plan.h"

#include <algorithm>

#include "outpost/util/units.h"

namespace outpost::models {

StatusOr<ModelLifecycle::CanaryPlan> CanaryPlanFromJson(const nlohmann::json& b) {
  ModelLifecycle::CanaryPlan plan;
  if (!b.is_object()) return Status::InvalidArgument("'canary' must be an object", "canary");
  if (b.contains("steps")) {
    const nlohmann::json& steps = b["steps"];
    if (!steps.is_array()) {
      return Status::InvalidArgument("'steps' must be an array of percentages", "steps");
    }
    plan.steps.clear();
    for (const auto& x : steps) {
      if (!x.is_number_integer()) {
        return Status::InvalidArgument("'steps' must hold whole percentages", "steps");
      }
      plan.steps.push_back(static_cast<int32_t>(std::clamp<int64_t>(x.get<int64_t>(), -1, 1000)));
    }
  }
  if (b.contains("bake")) {
    auto ms = b["bake"].is_string() ? util::ParseDurationMs(b["bake"].get<std::string>())
                                    : StatusOr<int64_t>(Status::InvalidArgument("not a string"));
    if (!ms.ok()) {
      return Status::InvalidArgument("'bake' must be a duration such as 30s or 10m", "bake");
    }
    plan.bake_ms = *ms;
  }
  if (b.contains("min_requests")) {
    if (!b["min_requests"].is_number_integer()) {
      return Status::InvalidArgument("'min_requests' must be a whole number", "min_requests");
    }
    plan.min_requests = b["min_requests"].get<int64_t>();
  }
  for (const char* k : {"max_ttft_ratio", "max_error_increase"}) {
    if (!b.contains(k)) continue;
    const bool ratio = std::string(k) == "max_ttft_ratio";
    const double lo = ratio ? 1.0 : 0.0, hi = ratio ? 100.0 : 1.0;
    if (!b[k].is_number() || b[k].get<double>() < lo || b[k].get<double>() > hi) {
      return Status::InvalidArgument(
          "'" + std::string(k) + "' must be a number from " + (ratio ? "1 to 100" : "0 to 1"), k);
    }
    (ratio ? plan.max_ttft_ratio : plan.max_error_increase) = b[k].get<double>();
  }
  return plan;
}

nlohmann::json CanaryPlanJson(const ModelLifecycle::CanaryPlan& plan) {
  return {{"steps", plan.steps},
          {"bake", std::to_string(plan.bake_ms) + "ms"},
          {"min_requests", plan.min_requests},
          {"max_ttft_ratio", plan.max_ttft_ratio},
          {"max_error_increase", plan.max_error_increase}};
}

}  // namespace outpost::models

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
  if (b.contains("shadow")) {
    if (!b["shadow"].is_number_integer()) {
      return Status::InvalidArgument("'shadow' must be a whole percentage of requests", "shadow");
    }
    plan.shadow = static_cast<int32_t>(std::clamp<int64_t>(b["shadow"].get<int64_t>(), -1, 1000));
  }
  for (const char* k : {"max_ttft_ratio", "max_error_increase", "min_decode_ratio"}) {
    if (!b.contains(k)) continue;
    const bool ratio = std::string(k) == "max_ttft_ratio";
    const double lo = ratio ? 1.0 : 0.0, hi = ratio ? 100.0 : 1.0;
    if (!b[k].is_number() || b[k].get<double>() < lo || b[k].get<double>() > hi) {
      return Status::InvalidArgument(
          "'" + std::string(k) + "' must be a number from " + (ratio ? "1 to 100" : "0 to 1"), k);
    }
    double& field = ratio                                    ? plan.max_ttft_ratio
                    : std::string(k) == "max_error_increase" ? plan.max_error_increase
                                                             : plan.min_decode_ratio;
    field = b[k].get<double>();
  }
  return plan;
}

Status CheckCanaryPlan(const ModelLifecycle::CanaryPlan& plan) {
  if (plan.shadow < 0 || plan.shadow > 100) {
    return Status::InvalidArgument("'shadow' must be a percentage of requests from 0 to 100",
                                   "shadow");
  }
  if ((plan.steps.empty() && plan.shadow == 0) || plan.steps.size() > 10) {
    return Status::InvalidArgument(
        "'steps' must list 1 to 10 shares (none only after a shadow phase: set 'shadow')", "steps");
  }
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    if (plan.steps[i] < 1 || plan.steps[i] > 99 || (i > 0 && plan.steps[i] <= plan.steps[i - 1])) {
      return Status::InvalidArgument(
          "'steps' must be rising percentages from 1 to 99 (the last step is followed by the "
          "promotion)",
          "steps");
    }
  }
  if (plan.bake_ms < 1000 || plan.bake_ms > 7 * 86'400'000LL) {
    return Status::InvalidArgument("'bake' must be between 1 s and 7 days", "bake");
  }
  if (plan.min_requests < 1 || plan.min_requests > 1'000'000) {
    return Status::InvalidArgument("'min_requests' must be between 1 and 1000000", "min_requests");
  }
  return Status::Ok();
}

nlohmann::json CanaryPlanJson(const ModelLifecycle::CanaryPlan& plan) {
  return {{"steps", plan.steps},
          {"shadow", plan.shadow},
          {"bake", std::to_string(plan.bake_ms) + "ms"},
          {"min_requests", plan.min_requests},
          {"max_ttft_ratio", plan.max_ttft_ratio},
          {"max_error_increase", plan.max_error_increase},
          {"min_decode_ratio", plan.min_decode_ratio}};
}

}  // namespace outpost::models

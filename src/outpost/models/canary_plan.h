// A canary plan (ModelLifecycle::CanaryPlan) from JSON — the one reader for
// POST /admin/models/canary and the fleet's desired-state document:
//
//   {"steps": [5, 25, 50], "bake": "10m", "min_requests": 50,
//    "max_ttft_ratio": 1.5, "max_error_increase": 0.05}
//
// Every key is optional (the plan's defaults); other keys are the caller's
// to allow or refuse. Types and ranges are checked here; the steps' order
// and bounds by ModelLifecycle::StartCanary, which names the field too.
#pragma once

#include <nlohmann/json.hpp>

#include "outpost/models/model_lifecycle.h"
#include "outpost/util/status.h"

namespace outpost::models {

// Errors: InvalidArgument naming the key ("steps", "bake", ...).
StatusOr<ModelLifecycle::CanaryPlan> CanaryPlanFromJson(const nlohmann::json& j);

// The plan as that JSON (bake as "<ms>ms").
nlohmann::json CanaryPlanJson(const ModelLifecycle::CanaryPlan& plan);

}  // namespace outpost::models

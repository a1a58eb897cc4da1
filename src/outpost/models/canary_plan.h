// A canary plan (ModelLifecycle::CanaryPlan) from JSON — the one reader for
// POST /admin/models/canary and the fleet's desired-state document:
//
//   {"steps": [5, 25, 50], "bake": "10m", "min_requests": 50,
//    "max_ttft_ratio": 1.5, "max_error_increase": 0.05, "min_decode_ratio": 0.5,
//    "shadow": 20}
//
// Every key is optional (the plan's defaults); other keys are the caller's
// to allow or refuse. Types are checked here, the ranges and the steps'
// order by CheckCanaryPlan (which ModelLifecycle::StartCanary calls too).
#pragma once

#include <nlohmann/json.hpp>

#include "outpost/models/model_lifecycle.h"
#include "outpost/util/status.h"

namespace outpost::models {

// Errors: InvalidArgument naming the key ("steps", "bake", ...).
StatusOr<ModelLifecycle::CanaryPlan> CanaryPlanFromJson(const nlohmann::json& j);

// A plan's bounds: steps rising from 1 to 99 percent (1 to 10 of them; none
// only after a shadow phase, which then ends in the promotion), bake 1 s to
// 7 days, min_requests 1 to 1000000, shadow 0 to 100. Errors:
// InvalidArgument naming the key.
Status CheckCanaryPlan(const ModelLifecycle::CanaryPlan& plan);

// The plan as that JSON (bake as "<ms>ms").
nlohmann::json CanaryPlanJson(const ModelLifecycle::CanaryPlan& plan);

}  // namespace outpost::models

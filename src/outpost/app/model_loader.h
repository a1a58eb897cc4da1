// Loading a model for serving (or benchmarking): read the GGUF metadata, plan
// capacity, load weights, create the context, check what llama.cpp allocated
// against the plan, and start the model's scheduler. Used by `outpost serve`
// and `outpost bench`, so both run exactly the same engine setup.
#pragma once

#include "outpost/api/model_catalog.h"
#include "outpost/app/config.h"
#include "outpost/telemetry/metrics.h"
#include "outpost/util/status.h"

namespace outpost::app {

// Errors name the file or the limit that failed (NotFound, InvalidArgument,
// ResourceExhausted with the numbers). The returned model's scheduler is running.
StatusOr<api::ServedModel> LoadServedModel(const ServeConfig& cfg, telemetry::Metrics* metrics);

}  // namespace outpost::app

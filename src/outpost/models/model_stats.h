// Per-model capacity stats, declared once (telemetry/stats.h); base label "model".
#pragma once

#include "outpost/telemetry/stats.h"

// clang-format off
#define OUTPOST_MODEL_STATS(COUNTER, GAUGE, HISTOGRAM, COUNTER_VEC)                            \
  GAUGE(memory_budget_bytes, "outpost_memory_budget_bytes",                                    \
        "Memory budget the capacity plan uses.")                                               \
  GAUGE(memory_planned_peak_bytes, "outpost_memory_planned_peak_bytes",                        \
        "Planned peak memory: weights + overhead + KV at max sessions.")                       \
  GAUGE(weight_bytes, "outpost_model_weight_bytes", "Bytes of model weights.")              \
  GAUGE(load_seconds, "outpost_model_load_seconds",                                          \
        "Time the model took to load and warm up, last load.")                               \
  GAUGE(loaded, "outpost_model_loaded", "1 while the model is loaded and serving.")
// clang-format on

namespace outpost::models {

OUTPOST_DEFINE_STATS(ModelStats, OUTPOST_MODEL_STATS);

}  // namespace outpost::models

// The HTTP front end's stats, declared once (telemetry/stats.h).
#pragma once

#include "outpost/telemetry/stats.h"

// clang-format off
#define OUTPOST_API_STATS(COUNTER, GAUGE, HISTOGRAM, COUNTER_VEC)                                \
  COUNTER_VEC(requests, "outpost_requests_total", "HTTP requests by endpoint and status code.", \
              "endpoint", "status")
// clang-format on

namespace outpost::api {

OUTPOST_DEFINE_STATS(ApiStats, OUTPOST_API_STATS);

}  // namespace outpost::api

// The router's stats, declared once (telemetry/stats.h).
#pragma once

#include "outpost/telemetry/stats.h"

// clang-format off
#define OUTPOST_ROUTER_STATS(COUNTER, GAUGE, HISTOGRAM, COUNTER_VEC)                            \
  COUNTER_VEC(route_decisions, "outpost_route_decisions_total",                                 \
              "Routing decisions by route and reason.", "route", "reason")                      \
  COUNTER(proxied_prompt_tokens, "outpost_proxied_prompt_tokens_total",                         \
          "Prompt tokens of requests answered upstream.")                                       \
  COUNTER(proxied_completion_tokens, "outpost_proxied_completion_tokens_total",                 \
          "Completion tokens of requests answered upstream.")
// clang-format on

namespace outpost::router {

OUTPOST_DEFINE_STATS(RouterStats, OUTPOST_ROUTER_STATS);

}  // namespace outpost::router

// Declaring a module's stats once, as an X-macro table:
//
//   #define OUTPOST_SCHEDULER_STATS(COUNTER, GAUGE, HISTOGRAM, COUNTER_VEC) ...
//     COUNTER(prompt_tokens, "outpost_prompt_tokens_total", "Prompt tokens.") ...
//     HISTOGRAM(ttft, "outpost_time_to_first_token_seconds", "...", LatencyBounds())
//   (one entry per line, each line ending in a backslash)
//   OUTPOST_DEFINE_STATS(SchedulerStats, OUTPOST_SCHEDULER_STATS)
//
// gives `struct SchedulerStats` with a `Counter& prompt_tokens`, a
// `Histogram& ttft`, ... and
//
//   static SchedulerStats Register(StatRegistry&, base_label_names, base_values);
//
// which registers each family with the base labels (e.g. {"model"}) in front
// of its own, and binds the members to the series for `base_values`.
// COUNTER_VEC(field, name, help, "label", ...) declares a family with labels
// chosen per use; its member is a CounterVec.
#pragma once

#include <string>
#include <vector>

#include "outpost/telemetry/stat_registry.h"

namespace outpost::telemetry::internal {

inline std::vector<std::string> Concat(std::vector<std::string> a,
                                       const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace outpost::telemetry::internal

#define OUTPOST_STAT_MEMBER_COUNTER_(field, name, help) ::outpost::telemetry::Counter& field;
#define OUTPOST_STAT_MEMBER_GAUGE_(field, name, help) ::outpost::telemetry::Gauge& field;
#define OUTPOST_STAT_MEMBER_HISTOGRAM_(field, name, help, bounds) \
  ::outpost::telemetry::Histogram& field;
#define OUTPOST_STAT_MEMBER_COUNTER_VEC_(field, name, help, ...) \
  ::outpost::telemetry::CounterVec field;

#define OUTPOST_STAT_INIT_COUNTER_(field, name, help)                                \
  r.Register({name, help, ::outpost::telemetry::StatType::kCounter, base_names, {}}) \
      .CounterWith(base_values),
#define OUTPOST_STAT_INIT_GAUGE_(field, name, help)                                \
  r.Register({name, help, ::outpost::telemetry::StatType::kGauge, base_names, {}}) \
      .GaugeWith(base_values),
#define OUTPOST_STAT_INIT_HISTOGRAM_(field, name, help, bounds)                            \
  r.Register({name, help, ::outpost::telemetry::StatType::kHistogram, base_names, bounds}) \
      .HistogramWith(base_values),
#define OUTPOST_STAT_INIT_COUNTER_VEC_(field, name, help, ...)                        \
  ::outpost::telemetry::CounterVec(                                                   \
      &r.Register({name,                                                              \
                   help,                                                              \
                   ::outpost::telemetry::StatType::kCounter,                          \
                   ::outpost::telemetry::internal::Concat(base_names, {__VA_ARGS__}), \
                   {}}),                                                              \
      base_values),

#define OUTPOST_STAT_ZERO_COUNTER_(field, name, help)
#define OUTPOST_STAT_ZERO_GAUGE_(field, name, help) field.Set(0);
#define OUTPOST_STAT_ZERO_HISTOGRAM_(field, name, help, bounds)
#define OUTPOST_STAT_ZERO_COUNTER_VEC_(field, name, help, ...)

#define OUTPOST_DEFINE_STATS(Struct, TABLE)                                                     \
  struct Struct {                                                                               \
    TABLE(OUTPOST_STAT_MEMBER_COUNTER_, OUTPOST_STAT_MEMBER_GAUGE_,                             \
          OUTPOST_STAT_MEMBER_HISTOGRAM_, OUTPOST_STAT_MEMBER_COUNTER_VEC_)                     \
    /* Every gauge to 0 (what it owned is gone); counters stay cumulative. */                   \
    void ZeroGauges() const {                                                                   \
      TABLE(OUTPOST_STAT_ZERO_COUNTER_, OUTPOST_STAT_ZERO_GAUGE_, OUTPOST_STAT_ZERO_HISTOGRAM_, \
            OUTPOST_STAT_ZERO_COUNTER_VEC_)                                                     \
    }                                                                                           \
    static Struct Register(::outpost::telemetry::StatRegistry& r,                               \
                           const std::vector<std::string>& base_names = {},                     \
                           const std::vector<std::string>& base_values = {}) {                  \
      return Struct{TABLE(OUTPOST_STAT_INIT_COUNTER_, OUTPOST_STAT_INIT_GAUGE_,                 \
                          OUTPOST_STAT_INIT_HISTOGRAM_, OUTPOST_STAT_INIT_COUNTER_VEC_)};       \
    }                                                                                           \
  }

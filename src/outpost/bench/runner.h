// BenchRunner — `outpost bench` measurements on this machine, through the real
// dispatcher, scheduler and engine (the path `outpost serve` uses, minus HTTP):
//
//   bandwidth   STREAM-style read and triad
//   prefill     tokens/s for one long prompt
//   decode      tokens/s for one sequence, and its ratio to the bandwidth ceiling
//   sweep       1, 2, 4, ... up to the admitted maximum sessions: aggregate and
//               per-user tokens/s, TTFT and inter-token latency p50/p99
//   memory      resident memory after load and with every session full, vs the
//               capacity plan's prediction (error in %)
//   sustained   optional constant load for a duration with periodic samples of
//               tokens/s, temperatures, clocks and power; throttling detection
//
// Runs on the calling thread (plus one client thread per concurrent request).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "outpost/engine/engine.h"
#include "outpost/models/serving_set.h"
#include "outpost/router/dispatcher.h"
#include "outpost/telemetry/stat_registry.h"

namespace outpost::bench {

struct BenchOptions {
  int threads = 0;
  int32_t prompt_tokens = 256;  // prefill measurement
  int32_t gen_tokens = 64;      // tokens per request in decode / sweep
  int32_t reps = 3;             // repetitions, median reported
  size_t membw_mib = 1024;
  double duration_s = 0;  // sustained mode when > 0
  double sample_interval_s = 5;
  std::function<void(const std::string&)> progress;  // one line per step
};

struct LatencyStats {
  double p50 = 0, p99 = 0;
};

struct SweepPoint {
  int32_t sessions = 0;
  double aggregate_tps = 0;
  double per_user_tps = 0;
  LatencyStats ttft_s, itl_s;
};

struct SustainedSample {
  double t_s = 0;
  double tps = 0;
  double cpu_temp_c = -1, cpu_mhz = -1, cpu_power_w = -1, gpu_temp_c = -1, gpu_mhz = -1,
         gpu_power_w = -1;
};

struct BenchReport {
  std::string model_name;
  std::string machine;
  std::string cpus;  // util::CpuBudget::Describe(): "2 CPUs (of 16 online: ...)"
  int threads = 0;
  double read_gbps = 0, triad_gbps = 0;
  double prefill_tps = 0;
  double decode_tps = 0;
  double ceiling_tps = 0;  // read bandwidth / bytes per token
  double decode_efficiency = 0;
  std::vector<SweepPoint> sweep;
  uint64_t rss_after_load = 0;
  uint64_t rss_full = 0;  // peak resident with every session full
  uint64_t planned_bytes = 0;
  double memory_error_pct = 0;
  int32_t sessions = 0;
  int32_t ctx_per_session = 0;
  std::vector<SustainedSample> sustained;
  double sustained_tps = 0;     // median of the last stretch
  double first_minute_tps = 0;  // median of the first minute
  bool throttled = false;
  std::string sensor_sources;
};

// Requests go through `dispatcher` (as completions with token-id prompts) to
// `model`. REQUIRES: the model's scheduler is started and idle and reports to
// `stats`.
BenchReport RunBench(router::Dispatcher& dispatcher, const models::ServedModel& model,
                     telemetry::StatRegistry& stats, const BenchOptions& options);

// One prompt of `prompt_tokens` (tokens/s to its first token) and one
// sequence generating `gen_tokens` (tokens/s between its first and last),
// each the median of `reps`, greedy, through `dispatcher`.
struct Speed {
  double prefill_tps = 0;
  double decode_tps = 0;
};
Speed MeasureSpeed(router::Dispatcher& dispatcher, const engine::Engine& engine,
                   int32_t prompt_tokens, int32_t gen_tokens, int32_t reps);

// Resident set size of this process now (VmRSS) and at its peak (VmHWM).
uint64_t ResidentBytes();
uint64_t PeakResidentBytes();

}  // namespace outpost::bench

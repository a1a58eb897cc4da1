// Planner — the three sizing gates, predicted from a model description and a
// hardware profile (no weights are loaded).
//
//   Gate 1, fit:   weights + runtime + KV per session x peak sessions
//                  (+ headroom) vs memory; the runtime (compute scratch,
//                  logits, allowance) as `serve` plans it, for a GGUF at hand.
//   Gate 2, speed: decode is bandwidth bound: ceiling = bandwidth / bytes read
//                  per token (weights + KV at the context); real engines reach
//                  60-70% of it (or the efficiency a `bench` report measured).
//                  Prefill is compute bound: 2 x params ops per token.
//   Gate 3, users: one decode step reads the weights once for all sessions and
//                  each session's KV; compute grows with sessions. Aggregate and
//                  per-user tokens/s as sessions grow, and where compute or
//                  memory becomes the limit.
//
// Pure functions over value types; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "outpost/planner/hardware.h"
#include "outpost/util/status.h"

namespace outpost::planner {

struct ModelSpec {
  std::string name;
  uint64_t n_params = 0;
  double bits_per_weight = 0;  // average, for reporting (weight_bytes * 8 / n_params)
  uint64_t weight_bytes = 0;
  int32_t n_layers = 0;
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;  // K and V head dimension
  // What the engine needs beyond weights and KV, as `outpost serve` plans it
  // (models/overhead_plan.h): llama.cpp's compute scratch and the runtime
  // allowance, plus one logits row per session. Known for a GGUF at hand;
  // 0 for a described model (left to the headroom, and the deploy figures
  // add kRuntimeOverheadBytes instead).
  uint64_t runtime_bytes = 0;
  uint64_t runtime_bytes_per_session = 0;
  // Where runtime_bytes came from ("llama.cpp's dry run"), for the report.
  std::string runtime_source;
};

// From a description of a model not at hand: weight bytes = params x bits / 8.
// Errors name the first non-positive field.
StatusOr<ModelSpec> DescribeModel(const std::string& name, double n_params, double bits_per_weight,
                                  int32_t n_layers, int32_t n_kv_heads, int32_t head_dim);

struct Workload {
  int32_t context = 4096;  // tokens per session
  int32_t peak_sessions = 1;
  double kv_bytes_per_element = 2.0;  // f16
  std::string kv_type = "f16";
  double headroom = 0.2;
  double latency_budget_ms = 100;  // per generated token
  int32_t prompt_tokens = 512;
  int32_t answer_tokens = 256;
};

struct Calibration {
  double decode_efficiency = 0;   // measured decode / ceiling; 0 = use the 60-70% band
  double prefill_efficiency = 0;  // measured prefill ops / peak; 0 = default 0.5
  std::string source;             // the bench report it came from
};

struct FitGate {
  uint64_t weight_bytes = 0;
  uint64_t kv_bytes_per_token = 0;
  uint64_t kv_bytes_per_session = 0;
  uint64_t runtime_bytes = 0;   // at peak sessions (ModelSpec)
  uint64_t peak_bytes = 0;      // weights + runtime + KV x peak sessions
  uint64_t required_bytes = 0;  // peak x (1 + headroom)
  uint64_t memory_bytes = 0;
  bool fits = false;
  int32_t max_sessions = 0;  // at the given context
  int32_t max_context = 0;   // at the given peak sessions
  std::string advice;        // what would make it fit (or "")
};

struct SpeedGate {
  uint64_t bytes_per_token = 0;  // weights + one session's KV at the context
  double ceiling_tps = 0;
  double ceiling_ms_per_token = 0;
  double low_tps = 0, high_tps = 0;  // realistic band
  double expected_tps = 0;           // middle of the band (or calibrated)
  double expected_ms_per_token = 0;
  double prefill_tps = 0;
  double ttft_ms = 0;
  bool meets_budget = false;
  std::string efficiency_source;  // "typical 60-70%" or the calibration file
};

struct ConcurrencyPoint {
  int32_t sessions = 0;
  double step_ms = 0;  // one decode step for all sessions
  double aggregate_tps = 0;
  double per_user_tps = 0;
  uint64_t memory_bytes = 0;  // weights + runtime + KV x sessions
  bool compute_bound = false;
};

struct ConcurrencyGate {
  std::vector<ConcurrencyPoint> points;  // 1, 2, 4, ... up to max(peak, fit)
  int32_t compute_bound_from = 0;        // first session count where compute limits (0 = never)
  ConcurrencyPoint at_peak;
  bool meets_budget_at_peak = false;
  std::string overflow_advice;
};

struct PlanReport {
  ModelSpec model;
  HardwareProfile hardware;
  Workload workload;
  FitGate fit;
  SpeedGate speed;
  ConcurrencyGate concurrency;
};

PlanReport Plan(const ModelSpec& model, const HardwareProfile& hw, const Workload& w,
                const Calibration& cal);

// Memory to give the process in a service manager or orchestrator (systemd
// MemoryHigh/MemoryMax, Kubernetes requests/limits): the plan's peak with
// headroom — for a GGUF at hand, runtime included, exactly the budget `serve`
// needs to admit the peak sessions; for a described model plus a flat
// allowance for the runtime (compute buffers, threads, HTTP front:
// kRuntimeOverheadBytes). The limit adds a quarter for spikes, so the kernel
// reclaims before it kills.
inline constexpr uint64_t kRuntimeOverheadBytes = 256ull << 20;
struct DeployMemory {
  uint64_t request_bytes = 0;  // MemoryHigh=, resources.requests.memory
  uint64_t limit_bytes = 0;    // MemoryMax=, resources.limits.memory
};
DeployMemory DeployMemoryFor(const PlanReport& r);
// "812M": whole MiB, as systemd and Kubernetes ("812Mi") write sizes.
std::string MebibytesText(uint64_t bytes);

// Decode-bound arithmetic on its own (used by Plan, pinned by tests):
// ms per token = bytes per token / bandwidth.
double DecodeMsPerToken(double bytes_per_token, double bandwidth_bytes_per_s);

}  // namespace outpost::planner

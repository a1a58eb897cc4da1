#include "outpost/planner/planner.h"

#include <algorithm>
#include <cmath>

#include "outpost/scheduler/capacity.h"
#include "outpost/util/units.h"

namespace outpost::planner {
namespace {

constexpr double kBandLow = 0.60;
constexpr double kBandHigh = 0.70;
constexpr double kDefaultPrefillEfficiency = 0.5;

std::string Gb(uint64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB", static_cast<double>(b) / 1e9);
  return buf;
}

}  // namespace

StatusOr<ModelSpec> DescribeModel(const std::string& name, double n_params, double bits,
                                  int32_t n_layers, int32_t n_kv_heads, int32_t head_dim) {
  if (!(n_params > 0)) return Status::InvalidArgument("'params' must be positive", "params");
  if (!(bits > 0 && bits <= 32))
    return Status::InvalidArgument("'bits' must be in (0, 32]", "bits");
  if (n_layers <= 0) return Status::InvalidArgument("'layers' must be positive", "layers");
  if (n_kv_heads <= 0) return Status::InvalidArgument("'kv-heads' must be positive", "kv-heads");
  if (head_dim <= 0) return Status::InvalidArgument("'head-dim' must be positive", "head-dim");
  ModelSpec m;
  m.name = name;
  m.n_params = static_cast<uint64_t>(n_params);
  m.bits_per_weight = bits;
  m.weight_bytes = static_cast<uint64_t>(std::llround(n_params * bits / 8.0));
  m.n_layers = n_layers;
  m.n_kv_heads = n_kv_heads;
  m.head_dim = head_dim;
  return m;
}

double DecodeMsPerToken(double bytes_per_token, double bandwidth) {
  return bytes_per_token / bandwidth * 1000.0;
}

PlanReport Plan(const ModelSpec& m, const HardwareProfile& hw, const Workload& w,
                const Calibration& cal) {
  PlanReport r;
  r.model = m;
  r.hardware = hw;
  r.workload = w;

  // Gate 1: fit.
  FitGate& f = r.fit;
  f.weight_bytes = m.weight_bytes;
  f.kv_bytes_per_token = scheduler::KvBytesPerToken(m.n_layers, m.n_kv_heads, m.head_dim,
                                                    m.head_dim, w.kv_bytes_per_element);
  f.kv_bytes_per_session = f.kv_bytes_per_token * static_cast<uint64_t>(w.context);
  // Weights, runtime and KV at n sessions (what `serve` plans).
  const auto use_at = [&](int32_t n) {
    return f.weight_bytes + m.runtime_bytes +
           (f.kv_bytes_per_session + m.runtime_bytes_per_session) * static_cast<uint64_t>(n);
  };
  f.runtime_bytes =
      m.runtime_bytes + m.runtime_bytes_per_session * static_cast<uint64_t>(w.peak_sessions);
  f.peak_bytes = use_at(w.peak_sessions);
  f.required_bytes = scheduler::RequiredWithHeadroom(f.peak_bytes, w.headroom);
  f.memory_bytes = hw.memory_bytes;
  f.fits = f.required_bytes <= hw.memory_bytes;
  // As scheduler::PlanCapacity counts it: usable = memory / (1 + headroom).
  const double usable = std::floor(static_cast<double>(hw.memory_bytes) / (1.0 + w.headroom));
  const double for_kv =
      usable - static_cast<double>(f.weight_bytes) - static_cast<double>(m.runtime_bytes);
  const double per_session =
      static_cast<double>(f.kv_bytes_per_session + m.runtime_bytes_per_session);
  f.max_sessions = for_kv > 0 && per_session > 0 ? static_cast<int32_t>(for_kv / per_session) : 0;
  const double for_context =
      for_kv - static_cast<double>(m.runtime_bytes_per_session) * w.peak_sessions;
  f.max_context =
      for_context > 0 && f.kv_bytes_per_token > 0
          ? static_cast<int32_t>(for_context / static_cast<double>(f.kv_bytes_per_token) /
                                 w.peak_sessions)
          : 0;
  if (!f.fits) {
    if (for_kv <= 0) {
      f.advice = "the weights alone (" + Gb(f.weight_bytes) +
                 (m.runtime_bytes > 0 ? " with the runtime's " + Gb(m.runtime_bytes) : "") +
                 ") exceed the usable memory (" + Gb(static_cast<uint64_t>(usable)) +
                 "); use a smaller model or a lower-bit quantization";
    } else {
      f.advice = "fits " + std::to_string(f.max_sessions) + " sessions at " +
                 std::to_string(w.context) + " tokens, or " + std::to_string(w.peak_sessions) +
                 " sessions at " + std::to_string(f.max_context) + " tokens";
      if (w.kv_type == "f16") {
        const uint64_t q8 = f.weight_bytes + f.runtime_bytes +
                            static_cast<uint64_t>(static_cast<double>(f.kv_bytes_per_session) *
                                                  (34.0 / 32.0) / 2.0 * w.peak_sessions);
        if (scheduler::RequiredWithHeadroom(q8, w.headroom) <= hw.memory_bytes)
          f.advice += "; --kv-type q8_0 would fit";
      }
    }
  }

  // Gate 2: speed (one session at the full context).
  SpeedGate& s = r.speed;
  s.bytes_per_token = f.weight_bytes + f.kv_bytes_per_session;
  s.ceiling_ms_per_token =
      DecodeMsPerToken(static_cast<double>(s.bytes_per_token), hw.bandwidth_bytes_per_s);
  s.ceiling_tps = 1000.0 / s.ceiling_ms_per_token;
  if (cal.decode_efficiency > 0) {
    s.low_tps = s.high_tps = s.expected_tps = s.ceiling_tps * cal.decode_efficiency;
    s.efficiency_source =
        "measured " + std::to_string(static_cast<int>(std::lround(cal.decode_efficiency * 100))) +
        "% (" + cal.source + ")";
  } else {
    s.low_tps = s.ceiling_tps * kBandLow;
    s.high_tps = s.ceiling_tps * kBandHigh;
    s.expected_tps = (s.low_tps + s.high_tps) / 2;
    s.efficiency_source = "typical 60-70% of the bandwidth ceiling";
  }
  s.expected_ms_per_token = 1000.0 / s.expected_tps;
  const double prefill_eff =
      cal.prefill_efficiency > 0 ? cal.prefill_efficiency : kDefaultPrefillEfficiency;
  const double ops_per_token = 2.0 * static_cast<double>(m.n_params);
  s.prefill_tps = hw.tops > 0 ? hw.tops * 1e12 * prefill_eff / ops_per_token : 0;
  s.ttft_ms = s.prefill_tps > 0 ? w.prompt_tokens / s.prefill_tps * 1000.0 : 0;
  s.meets_budget = s.expected_ms_per_token <= w.latency_budget_ms;

  // Gate 3: concurrency. Each step reads the weights once plus every session's
  // KV (half full on average), and computes 2 x params ops per session.
  ConcurrencyGate& c = r.concurrency;
  const double eff = s.expected_tps / s.ceiling_tps;
  const int32_t last =
      std::max({w.peak_sessions, f.max_sessions > 0 ? std::min(f.max_sessions, 1024) : 1, 1});
  auto point = [&](int32_t n) {
    ConcurrencyPoint p;
    p.sessions = n;
    const double bytes =
        static_cast<double>(f.weight_bytes) + n * static_cast<double>(f.kv_bytes_per_session) / 2;
    const double mem_ms = DecodeMsPerToken(bytes, hw.bandwidth_bytes_per_s) / eff;
    const double cmp_ms =
        hw.tops > 0 ? n * ops_per_token / (hw.tops * 1e12 * prefill_eff) * 1000.0 : 0;
    p.compute_bound = cmp_ms > mem_ms;
    p.step_ms = std::max(mem_ms, cmp_ms);
    p.aggregate_tps = n * 1000.0 / p.step_ms;
    p.per_user_tps = 1000.0 / p.step_ms;
    p.memory_bytes = use_at(n);
    return p;
  };
  for (int32_t n = 1; n <= last; n *= 2) c.points.push_back(point(n));
  if (c.points.back().sessions != last) c.points.push_back(point(last));
  for (int32_t n = 1; n <= last; ++n) {
    if (point(n).compute_bound) {
      c.compute_bound_from = n;
      break;
    }
  }
  c.at_peak = point(w.peak_sessions);
  c.meets_budget_at_peak = c.at_peak.step_ms <= w.latency_budget_ms;
  // Past the peak: a new request waits for one answer to finish.
  const double answer_s = w.answer_tokens / c.at_peak.per_user_tps;
  char buf[256];
  std::snprintf(
      buf, sizeof buf,
      "past %d sessions, requests queue: expect about %.1f s wait per request ahead (one %d-token "
      "answer "
      "at %.1f tokens/s); hand overflow to a peer box, or to central when the data class allows",
      w.peak_sessions, answer_s, w.answer_tokens, c.at_peak.per_user_tps);
  c.overflow_advice = buf;
  return r;
}

DeployMemory DeployMemoryFor(const PlanReport& r) {
  DeployMemory d;
  d.request_bytes = r.fit.required_bytes + (r.model.runtime_bytes > 0 ? 0 : kRuntimeOverheadBytes);
  d.limit_bytes = d.request_bytes + d.request_bytes / 4;
  return d;
}

std::string MebibytesText(uint64_t bytes) {
  const uint64_t mib = (bytes + (1ull << 20) - 1) >> 20;
  return std::to_string(mib) + "M";
}

}  // namespace outpost::planner

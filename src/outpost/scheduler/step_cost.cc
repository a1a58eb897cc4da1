// Scheduler step costs (scheduler.h), engine thread: the measured decode and
// prefill rates behind Retry-After, and the per-token step costs behind the
// step budget's prefill chunk.
#include "outpost/scheduler/scheduler.h"

#include <algorithm>

namespace outpost::scheduler {

using util::Seconds;

void Scheduler::LearnStepCost(int32_t n_decode, int32_t n_prefill, util::Clock::Duration step) {
  if (options_.step_budget_ms <= 0 || n_decode == 0) return;
  const double ms = Seconds(step) * 1000.0;
  auto ema = [](double& v, double x) { v = v <= 0 ? x : 0.7 * v + 0.3 * x; };
  if (n_prefill == 0) {
    ema(decode_step_ms_, ms);
  } else if (decode_step_ms_ > 0) {
    ema(prefill_token_ms_, std::max(ms - decode_step_ms_, 0.0) / n_prefill);
  } else {
    // No decode-only step measured yet: every token costs the same.
    ema(prefill_token_ms_, ms / (n_decode + n_prefill));
  }
  stats_.prefill_chunk_tokens.Set(PrefillChunk());
}

int32_t Scheduler::PrefillChunk() const {
  if (options_.step_budget_ms <= 0 || prefill_token_ms_ <= 0) return options_.prefill_chunk;
  const double room = static_cast<double>(options_.step_budget_ms) - decode_step_ms_;
  const double tokens = room / prefill_token_ms_;
  const int32_t lo = std::min(kMinBudgetChunk, options_.prefill_chunk);
  if (tokens <= lo) return lo;
  if (tokens >= options_.prefill_chunk) return options_.prefill_chunk;
  return static_cast<int32_t>(tokens);
}

void Scheduler::UpdateRate(int32_t n_sampled, int32_t n_prefill, util::Clock::Duration step,
                           bool idle) {
  // Rates over busy time only (idle gaps do not dilute them), refreshed each
  // busy second and when the engine goes idle; never reset by a scrape.
  rate_window_tokens_ += n_sampled;
  rate_window_prefill_ += n_prefill;
  rate_window_busy_ += step;
  const double dt = Seconds(rate_window_busy_);
  if (dt < (idle ? kMinIdleRateWindow : 1.0)) return;
  const double tps = static_cast<double>(rate_window_tokens_) / dt;
  const double pps = static_cast<double>(rate_window_prefill_) / dt;
  rate_window_tokens_ = 0;
  rate_window_prefill_ = 0;
  rate_window_busy_ = util::Clock::Duration::zero();
  prefill_tps_ = prefill_tps_ <= 0 ? pps : 0.5 * prefill_tps_ + 0.5 * pps;
  stats_.prefill_tokens_per_second.Set(prefill_tps_);
  std::lock_guard<std::mutex> lock(mu_);
  decode_tps_ = decode_tps_ <= 0 ? tps : 0.5 * decode_tps_ + 0.5 * tps;
  stats_.decode_tokens_per_second.Set(decode_tps_);
}

}  // namespace outpost::scheduler

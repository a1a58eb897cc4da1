#include "outpost/bench/tune.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "outpost/bench/runner.h"
#include "outpost/models/serving_set.h"
#include "outpost/router/dispatcher_impl.h"

namespace outpost::bench {

std::vector<int> ThreadCandidates(int cores) {
  cores = std::max(1, cores);
  std::set<int> c;
  for (int t = 1; t < cores; t *= 2) c.insert(t);
  const int step = std::max(1, cores / 4);
  for (int t = std::max(1, cores / 2); t < cores; t += step) c.insert(t);
  c.insert(cores);
  std::vector<int> out(c.begin(), c.end());
  // At most 8: keep the largest (where the answer usually is) and 1.
  while (out.size() > 8) out.erase(out.begin() + 1);
  return out;
}

StatusOr<Tuning> TuneThreads(const models::ModelRuntimeOptions& base,
                             const std::vector<int>& candidates, int32_t prompt_tokens,
                             int32_t gen_tokens, int32_t reps, uint64_t memory_budget,
                             telemetry::StatRegistry& stats,
                             const std::function<void(const std::string&)>& progress) {
  Tuning t;
  for (int threads : candidates) {
    models::ModelRuntimeOptions o = base;
    o.threads = threads;
    o.threads_batch = threads;
    o.parallel = 1;
    models::MemoryLedger ledger(memory_budget);
    auto served = models::LoadModel(o, &ledger, &stats);
    if (!served.ok()) return served.status();
    models::ServingSet serving;
    serving.Add(*served);
    router::DispatcherImpl dispatcher(&serving, /*router=*/nullptr);
    const int32_t prompt =
        std::min(prompt_tokens, (*served)->plan.ctx_per_session - gen_tokens - 2);
    const Speed sp =
        MeasureSpeed(dispatcher, (*served)->scheduler->engine(), prompt, gen_tokens, reps);
    (*served)->scheduler->Stop();
    t.points.push_back({threads, sp.prefill_tps, sp.decode_tps});
    if (progress) {
      progress("tune: " + std::to_string(threads) + " threads: prefill " +
               std::to_string(static_cast<int>(sp.prefill_tps)) + " tok/s, decode " +
               std::to_string(static_cast<int>(sp.decode_tps)) + " tok/s");
    }
  }
  if (t.points.empty()) return Status::InvalidArgument("no thread count to try", "--tune");
  const auto best = [&](double ThreadPoint::*field) {
    return std::max_element(
               t.points.begin(), t.points.end(),
               [&](const ThreadPoint& a, const ThreadPoint& b) { return a.*field < b.*field; })
        ->threads;
  };
  t.threads = best(&ThreadPoint::decode_tps);
  t.threads_batch = best(&ThreadPoint::prefill_tps);
  return t;
}

namespace {

// The median token gap (s) at n decoding sessions, linear between the swept
// counts; 0 outside them.
double StepSeconds(const std::vector<SweepPoint>& sweep, double n) {
  for (size_t i = 0; i < sweep.size(); ++i) {
    const SweepPoint& hi = sweep[i];
    if (n > hi.sessions) continue;
    if (n == hi.sessions) return hi.itl_s.p50;
    if (i == 0) return 0;
    const SweepPoint& lo = sweep[i - 1];
    const double f = (n - lo.sessions) / static_cast<double>(hi.sessions - lo.sessions);
    return lo.itl_s.p50 + f * (hi.itl_s.p50 - lo.itl_s.p50);
  }
  return 0;
}

}  // namespace

void SuggestFromSweep(const std::vector<SweepPoint>& sweep, Tuning* t) {
  if (sweep.empty()) return;
  if (sweep.back().itl_s.p50 > 0) {
    t->step_budget_ms = static_cast<int64_t>(std::ceil(sweep.back().itl_s.p50 * 1000.0 * 1.5));
  }
  t->verify.clear();
  t->speculative_draft = 0;
  t->speculative_max_batch = 0;
  bool free_so_far = true;  // the suggestion covers 1 … max_batch sequences
  for (const SweepPoint& p : sweep) {
    const double base = p.itl_s.p50;
    const double with = StepSeconds(sweep, static_cast<double>(p.sessions) * (1 + kTuneDraft));
    if (base <= 0 || with <= 0) break;  // past the sweep: not measured
    t->verify.push_back({p.sessions, with / base});
    free_so_far = free_so_far && with / base <= kFreeVerify;
    if (free_so_far) t->speculative_max_batch = p.sessions;
  }
  if (t->speculative_max_batch > 0) t->speculative_draft = kTuneDraft;
}

std::string SuggestedConfig(const Tuning& t) {
  std::string out = "threads: " + std::to_string(t.threads) + "\n" +
                    "threads_batch: " + std::to_string(t.threads_batch) + "\n";
  if (t.step_budget_ms > 0) out += "step_budget: " + std::to_string(t.step_budget_ms) + "ms\n";
  if (t.speculative_draft > 0) {
    out += "speculative_draft: " + std::to_string(t.speculative_draft) + "\n" +
           "speculative_max_batch: " + std::to_string(t.speculative_max_batch) + "\n";
  } else if (!t.verify.empty()) {
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.2f", t.verify.front().ratio);
    out += "speculative_draft: 0  # " + std::to_string(kTuneDraft) +
           " guesses make a 1-sequence step " + ratio + "x longer: not nearly free here\n";
  }
  return out;
}

}  // namespace outpost::bench

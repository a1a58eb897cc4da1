// ModelLifecycle's canaries (model_lifecycle.h: "Shadow", "Canary"):
// StartCanary loads and warms the candidate and opens its first step (or
// its shadow); EvaluateCanaries, on the reaper thread, judges each step
// against the active version over the same window and raises, extends,
// promotes or aborts; Promote and AbortCanary end one. The swaps they make
// are model_lifecycle.cc's.
#include <spdlog/spdlog.h>

#include <chrono>

#include "outpost/models/canary_plan.h"
#include "outpost/models/model_lifecycle.h"
#include "outpost/util/status_macros.h"

namespace outpost::models {
namespace {

using Steady = std::chrono::steady_clock;

}  // namespace

StatusOr<ModelLifecycle::CanaryStatus> ModelLifecycle::StartCanary(const std::string& ref,
                                                                   const CanaryPlan& plan,
                                                                   bool force) {
  OUTPOST_RETURN_IF_ERROR(CheckCanaryPlan(plan));
  std::lock_guard<std::mutex> lock(op_mu_);
  ModelVersion v;
  OUTPOST_ASSIGN_OR_RETURN(v, store_->Get(ref));
  if (canaries_.count(v.name) > 0) {
    return Status::InvalidArgument("a canary of " + v.name + " is running already (" +
                                       canaries_.at(v.name).model->version + ")",
                                   "model");
  }
  const auto active = serving_->Find(v.name);
  if (active == nullptr || active->id != v.name || active->version.empty()) {
    return Status::InvalidArgument(
        "no stored version of " + v.name + " serves here to compare a canary with", "model");
  }
  if (active->version == v.version) {
    return Status::InvalidArgument(ref + " is already the served version", "model");
  }
  if (!v.verified_file()) {
    return Status::InvalidArgument(ref + " cannot be a canary: it is " + v.state, "model");
  }
  Status gate = ValidationGate(v, force);
  if (gate.ok() && options_.recheck) gate = options_.recheck(v);
  if (!gate.ok()) {
    return gate;
  }
  std::string warmup;
  std::shared_ptr<ServedModel> loaded;
  auto standby = standby_.find(v.name);
  if (standby != standby_.end() && standby->second->version == v.version) {
    auto m = std::const_pointer_cast<ServedModel>(standby->second);
    standby_.erase(standby);
    loaded = std::move(m);
  } else {
    Reap(/*wait=*/true);
    auto l = LoadVersion(v, &warmup);
    if (!l.ok() && l.status().code() == StatusCode::kResourceExhausted &&
        standby != standby_.end()) {
      // As for an activation: the standby gives way, only for room.
      spdlog::info("lifecycle: canary {} does not fit beside the standby {}:{}; unloading it first",
                   ref, standby->second->id, standby->second->version);
      draining_.push_back(std::move(standby->second));
      standby_.erase(standby);
      Reap(/*wait=*/true);
      PublishVersions();
      l = LoadVersion(v, &warmup);
    }
    if (!l.ok()) {
      canary_decisions_->CounterWith({v.name, "failed"}).Add();
      if (l.status().code() == StatusCode::kResourceExhausted) {
        // No cold canary: both versions serve at once, so both must fit.
        return Status::ResourceExhausted(ref + " cannot be a canary here: a canary serves beside " +
                                         active->version + ", and both do not fit (" +
                                         l.status().message() +
                                         "); activate it instead (a cold "
                                         "swap) or free memory");
      }
      return l.status();
    }
    loaded = std::move(l).value();
  }
  OUTPOST_RETURN_IF_ERROR(store_->MarkCanary(ref));
  CanaryRun run;
  run.model = loaded;
  run.baseline = active->version;
  run.plan = plan;
  run.shadow_phase = plan.shadow > 0;
  auto& r = canaries_[v.name] = std::move(run);
  StartStep(&r, 0);
  r.last_decision = r.shadow_phase ? "started in the shadow: " + std::to_string(plan.shadow) +
                                         "% of requests mirrored"
                                   : "started at " + std::to_string(plan.steps[0]) + "%";
  canary_decisions_->CounterWith({v.name, "start"}).Add();
  spdlog::info("lifecycle: canary {} against {}: {}, steps of {} s, at least {} requests each", ref,
               active->version,
               r.shadow_phase ? std::to_string(plan.shadow) + "% of requests mirrored in the shadow"
                              : std::to_string(plan.steps[0]) + "% of conversations",
               plan.bake_ms / 1000, plan.min_requests);
  PublishVersions();
  CanaryStatus status = StatusOf(v.name, r);
  std::lock_guard<std::mutex> view_lock(view_mu_);
  std::erase_if(canary_view_, [&](const CanaryStatus& c) { return c.model == v.name; });
  canary_view_.push_back(status);
  return status;
}

void ModelLifecycle::StartStep(CanaryRun* run, size_t step) {
  run->step = step;
  run->step_start = Steady::now();
  run->next_verdict = run->step_start + std::chrono::milliseconds(run->plan.bake_ms);
  run->canary0 = run->model->outcomes->Take();
  if (const auto active = serving_->Find(run->model->id)) {
    run->active0 = active->outcomes->Take();
  }
  if (run->shadow_phase) {
    serving_->SetCanary(run->model, 0, run->plan.shadow * 100);
    canary_share_->GaugeWith({run->model->id}).Set(0);
    return;
  }
  serving_->SetCanary(run->model, run->plan.steps[step] * 100);
  canary_share_->GaugeWith({run->model->id}).Set(run->plan.steps[step]);
}

ModelLifecycle::CanaryStatus ModelLifecycle::StatusOf(const std::string& name,
                                                      const CanaryRun& run) const {
  CanaryStatus s;
  s.model = name;
  s.version = run.model->version;
  s.baseline = run.baseline;
  s.phase = run.shadow_phase ? "shadow" : "live";
  s.percent = run.shadow_phase ? 0 : run.plan.steps[run.step];
  s.shadow_percent = run.shadow_phase ? run.plan.shadow : 0;
  s.step = run.shadow_phase ? 0 : run.step + 1;
  s.steps = run.plan.steps.size();
  s.step_age_s = std::chrono::duration<double>(Steady::now() - run.step_start).count();
  s.canary = VersionOutcomes::Since(run.model->outcomes->Take(), run.canary0);
  s.canary_ttft_p95_s = run.model->outcomes->TtftP95Since(run.canary0);
  s.canary_decode_tps = s.canary.DecodeRate(kDecodeSample);
  if (const auto active = serving_->Find(name)) {
    s.active = VersionOutcomes::Since(active->outcomes->Take(), run.active0);
    s.active_ttft_p95_s = active->outcomes->TtftP95Since(run.active0);
    s.active_decode_tps = s.active.DecodeRate(kDecodeSample);
  }
  s.last_decision = run.last_decision;
  return s;
}

void ModelLifecycle::EvaluateCanaries() {
  std::vector<std::pair<std::string, std::string>> aborts;  // name, reason
  std::vector<std::string> promotions;
  for (auto& [name, run] : canaries_) {
    const CanaryStatus s = StatusOf(name, run);
    const auto& c = s.canary;
    const auto& a = s.active;
    auto rate = [](int64_t n, int64_t of) {
      return of > 0 ? static_cast<double>(n) / static_cast<double>(of) : 0.0;
    };
    // A hard failure: an error burst, whatever the step's age.
    if (c.errors >= 3 && 2 * c.errors >= c.requests) {
      aborts.emplace_back(name, "error burst: " + std::to_string(c.errors) + " of " +
                                    std::to_string(c.requests) + " requests failed");
      continue;
    }
    if (Steady::now() < run.next_verdict) continue;
    if (c.requests < run.plan.min_requests) {
      run.last_decision =
          (run.shadow_phase
               ? "extended in the shadow: " + std::to_string(c.requests) + " mirrored (" +
                     std::to_string(c.shadow_skipped) + " skipped, no spare capacity)"
               : "extended at " + std::to_string(s.percent) + "%: " + std::to_string(c.requests)) +
          " of " + std::to_string(run.plan.min_requests) + " requests needed for a verdict";
      run.next_verdict = Steady::now() + std::chrono::milliseconds(run.plan.bake_ms);
      canary_decisions_->CounterWith({name, "extend"}).Add();
      spdlog::info("lifecycle: canary {}:{} {}", name, s.version, run.last_decision);
      continue;
    }
    const double ce = rate(c.errors, c.requests), ae = rate(a.errors, a.requests);
    const double cm = rate(c.empty, c.requests), am = rate(a.empty, a.requests);
    char why[256] = "";
    if (ce > ae + run.plan.max_error_increase) {
      std::snprintf(why, sizeof why, "error rate %.1f%% against the active version's %.1f%%",
                    100 * ce, 100 * ae);
    } else if (cm > am + run.plan.max_error_increase) {
      std::snprintf(why, sizeof why, "empty answers %.1f%% against the active version's %.1f%%",
                    100 * cm, 100 * am);
    } else if (s.canary_ttft_p95_s > 0 && s.active_ttft_p95_s > 0 &&
               s.canary_ttft_p95_s > run.plan.max_ttft_ratio * s.active_ttft_p95_s) {
      std::snprintf(why, sizeof why, "TTFT p95 %.0f ms against the active version's %.0f ms",
                    1000 * s.canary_ttft_p95_s, 1000 * s.active_ttft_p95_s);
    } else if (s.canary_decode_tps > 0 && s.active_decode_tps > 0 &&
               s.canary_decode_tps < run.plan.min_decode_ratio * s.active_decode_tps) {
      std::snprintf(why, sizeof why,
                    "decode %.1f tokens/s against the active version's %.1f tokens/s",
                    s.canary_decode_tps, s.active_decode_tps);
    }
    if (why[0] != '\0') {
      aborts.emplace_back(name, why);
      continue;
    }
    if (run.shadow_phase) {
      const std::string same = c.compared > 0 ? ", same answer " + std::to_string(c.same) + " of " +
                                                    std::to_string(c.compared)
                                              : "";
      if (run.plan.steps.empty()) {
        spdlog::info("lifecycle: canary {}:{} passed the shadow after {} mirrored requests{}", name,
                     s.version, c.requests, same);
        promotions.push_back(name);
        continue;
      }
      run.shadow_phase = false;
      StartStep(&run, 0);
      run.last_decision = "out of the shadow to " + std::to_string(run.plan.steps[0]) + "% after " +
                          std::to_string(c.requests) + " mirrored requests (errors " +
                          std::to_string(c.errors) + same + ")";
      canary_decisions_->CounterWith({name, "advance"}).Add();
      spdlog::info("lifecycle: canary {}:{} {}", name, s.version, run.last_decision);
      continue;
    }
    if (run.step + 1 >= run.plan.steps.size()) {
      promotions.push_back(name);
      continue;
    }
    StartStep(&run, run.step + 1);
    run.last_decision = "advanced to " + std::to_string(run.plan.steps[run.step]) + "% after " +
                        std::to_string(c.requests) + " requests (errors " +
                        std::to_string(c.errors) + ", active " + std::to_string(a.errors) + " of " +
                        std::to_string(a.requests) + ")";
    canary_decisions_->CounterWith({name, "advance"}).Add();
    spdlog::info("lifecycle: canary {}:{} {}", name, s.version, run.last_decision);
  }
  for (const auto& [name, reason] : aborts) AbortCanary(name, reason);
  for (const auto& name : promotions) {
    if (auto p = PromoteLocked(name); !p.ok()) {
      spdlog::error("lifecycle: promoting the canary of {}: {}", name, p.status().message());
    }
  }
  PublishCanaryView();
}

void ModelLifecycle::PublishCanaryView() {
  std::vector<CanaryStatus> view;
  for (const auto& [name, run] : canaries_) view.push_back(StatusOf(name, run));
  std::lock_guard<std::mutex> lock(view_mu_);
  canary_view_ = std::move(view);
}

void ModelLifecycle::AbortCanary(const std::string& name, const std::string& reason) {
  auto it = canaries_.find(name);
  if (it == canaries_.end()) return;
  // Out of serving and out of every view first: whoever sees the store say
  // "retired" sees no canary left.
  serving_->ClearCanary(name);
  const std::string ref = name + ":" + it->second.model->version;
  const std::string baseline = it->second.baseline;
  draining_.push_back(std::move(it->second.model));
  canaries_.erase(it);
  canary_share_->GaugeWith({name}).Set(0);
  PublishCanaryView();
  if (Status st = store_->MarkRetired(ref, "canary aborted: " + reason); !st.ok()) {
    spdlog::error("lifecycle: marking {} retired: {}", ref, st.message());
  }
  spdlog::warn("lifecycle: canary {} aborted ({}); {} serves everything", ref, reason, baseline);
  canary_decisions_->CounterWith({name, "abort"}).Add();
  Reap(/*wait=*/false);
  PublishVersions();
}

StatusOr<ModelLifecycle::Swap> ModelLifecycle::PromoteLocked(const std::string& name) {
  auto it = canaries_.find(name);
  if (it == canaries_.end()) {
    return Status::NotFound("no canary of '" + name + "' is running", "model");
  }
  ModelVersion v;
  OUTPOST_ASSIGN_OR_RETURN(v, store_->Get(name + ":" + it->second.model->version));
  // The canary leaves the views before the store says "active", and comes
  // back if the switch fails.
  CanaryRun run = std::move(it->second);
  canaries_.erase(it);
  PublishCanaryView();
  auto swap = SwitchTo(v, run.model);
  if (!swap.ok()) {
    canaries_.emplace(name, std::move(run));
    PublishCanaryView();
    return swap.status();
  }
  serving_->ClearCanary(name);
  canary_decisions_->CounterWith({name, "promote"}).Add();
  canary_share_->GaugeWith({name}).Set(0);
  spdlog::info("lifecycle: canary {}:{} promoted; {} is the standby", name, v.version, swap->from);
  Count(name, "promote", "ok");
  PublishVersions();
  return swap;
}

StatusOr<ModelLifecycle::Swap> ModelLifecycle::Promote(const std::string& name) {
  std::lock_guard<std::mutex> lock(op_mu_);
  return PromoteLocked(name);
}

std::vector<ModelLifecycle::CanaryStatus> ModelLifecycle::Canaries() {
  std::lock_guard<std::mutex> lock(view_mu_);
  return canary_view_;
}

}  // namespace outpost::models

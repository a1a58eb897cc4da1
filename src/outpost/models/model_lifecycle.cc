#include "outpost/models/model_lifecycle.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <thread>

#include "outpost/models/canary_plan.h"
#include "outpost/scheduler/collecting_sink.h"
#include "outpost/util/status_macros.h"

namespace outpost::models {
namespace {

using Steady = std::chrono::steady_clock;

double SecondsSince(Steady::time_point t) {
  return std::chrono::duration<double>(Steady::now() - t).count();
}

// True when no request holds `m` and its scheduler has nothing queued or
// running: nobody can reach it any more, so it may be unloaded.
bool Idle(const std::shared_ptr<const ServedModel>& m) {
  if (m.use_count() > 1) return false;
  const auto snap = m->scheduler->Snapshot();
  return snap.active == 0 && snap.queued == 0;
}

std::string Key(const ServedModel& m) {
  return m.id + "@" + m.version;
}

}  // namespace

ModelLifecycle::ModelLifecycle(ModelStore* store, ServingSet* serving, Loader loader,
                               telemetry::StatRegistry* stats, Options options)
    : store_(store),
      serving_(serving),
      loader_(std::move(loader)),
      options_(std::move(options)),
      swaps_(&stats->Register({"outpost_model_swaps_total",
                               "Model version changes by action (activate, rollback) and result "
                               "(ok, failed).",
                               telemetry::StatType::kCounter,
                               {"model", "action", "result"},
                               {}})),
      version_info_(&stats->Register({"outpost_model_version_info",
                                      "1 for each loaded version of a stored model, with its "
                                      "role (active, standby, draining).",
                                      telemetry::StatType::kGauge,
                                      {"model", "version", "role"},
                                      {}})),
      canary_decisions_(&stats->Register({"outpost_canary_decisions_total",
                                          "Canary steps by decision: start, advance, extend "
                                          "(too little traffic for a verdict), promote, abort.",
                                          telemetry::StatType::kCounter,
                                          {"model", "decision"},
                                          {}})),
      canary_share_(&stats->Register({"outpost_canary_share_percent",
                                      "The share of conversations a running canary gets (0: "
                                      "none).",
                                      telemetry::StatType::kGauge,
                                      {"model"},
                                      {}})) {
  reaper_ = std::thread([this] { ReapLoop(); });
}

ModelLifecycle::~ModelLifecycle() {
  {
    std::lock_guard<std::mutex> lock(reaper_mu_);
    stopping_ = true;
  }
  reaper_cv_.notify_all();
  reaper_.join();
}

void ModelLifecycle::ReapLoop() {
  std::unique_lock<std::mutex> lock(reaper_mu_);
  while (!reaper_cv_.wait_for(lock, std::chrono::milliseconds(250), [&] { return stopping_; })) {
    std::unique_lock<std::mutex> op(op_mu_, std::try_to_lock);
    if (!op.owns_lock()) continue;  // an operation runs: it reaps for itself
    if (!canaries_.empty()) EvaluateCanaries();
    if (draining_.empty()) continue;
    Reap(/*wait=*/false);
    PublishVersions();
  }
}

void ModelLifecycle::Count(const std::string& model, const std::string& action,
                           const std::string& result) {
  swaps_->CounterWith({model, action, result}).Add();
}

StatusOr<std::shared_ptr<ServedModel>> ModelLifecycle::LoadVersion(const ModelVersion& v,
                                                                   std::string* warmup) {
  const std::string path = store_->ModelPath(v);
  spdlog::info("lifecycle: loading {} from {}", v.ref(), path);
  std::shared_ptr<ServedModel> m;
  OUTPOST_ASSIGN_OR_RETURN(m, loader_(path, v.name, v.version));
  // Warm up: one short greedy chat through the real scheduler. It must
  // answer, and answer something (a broken file often answers nothing).
  scheduler::PromptInput in;
  in.chat = true;
  in.messages.emplace_back("user", options_.warmup_prompt);
  scheduler::GenerationRequest req;
  req.id = "warmup-" + v.ref();
  req.max_tokens = options_.warmup_tokens;
  req.sampling.temperature = 0.0f;
  req.operation = "chat";
  Status st = m->scheduler->Prepare(in, false, &req);
  auto sink = std::make_shared<scheduler::CollectingSink>();
  if (st.ok()) st = m->scheduler->Submit(std::move(req), sink);
  if (st.ok() && !sink->Wait(std::chrono::minutes(5))) {
    st = Status::Internal("the warm-up generation did not finish within 5 minutes");
  }
  if (st.ok() && !sink->result().error.ok()) st = sink->result().error;
  if (st.ok() && sink->text().empty()) {
    st = Status::Internal("the warm-up generation answered nothing (a damaged or unusable model?)");
  }
  if (!st.ok()) {
    m->scheduler->Stop();
    return Status::InvalidArgument(v.ref() + ": warm-up failed: " + st.message(), "model");
  }
  *warmup = sink->text();
  spdlog::info("lifecycle: {} warmed up: \"{}\"", v.ref(), *warmup);
  return m;
}

StatusOr<std::shared_ptr<const ServedModel>> ModelLifecycle::Start(const std::string& ref) {
  std::lock_guard<std::mutex> lock(op_mu_);
  if (const int n = store_->ResetCanaries(ref.substr(0, ref.find(':'))); n > 0) {
    spdlog::warn(
        "lifecycle: {} canary version(s) of {} interrupted by the restart: back to "
        "verified",
        n, ref.substr(0, ref.find(':')));
  }
  ModelVersion v;
  if (ref.find(':') != std::string::npos) {
    OUTPOST_ASSIGN_OR_RETURN(v, store_->Get(ref));
    OUTPOST_ASSIGN_OR_RETURN(v, store_->MarkActive(ref));
  } else {
    OUTPOST_ASSIGN_OR_RETURN(v, store_->ActiveOf(ref));
  }
  std::string warmup;
  std::shared_ptr<ServedModel> m;
  OUTPOST_ASSIGN_OR_RETURN(m, LoadVersion(v, &warmup));
  serving_->Replace(m);
  PublishVersions();
  return std::shared_ptr<const ServedModel>(m);
}

StatusOr<ModelLifecycle::Swap> ModelLifecycle::SwitchTo(
    const ModelVersion& target, std::shared_ptr<const ServedModel> preloaded) {
  const auto start = Steady::now();
  Swap swap;
  swap.model = target.name;
  swap.to = target.version;
  auto current = serving_->Find(target.name);
  if (current != nullptr && current->id == target.name) swap.from = current->version;
  if (current != nullptr && current->version == target.version) {
    return Status::InvalidArgument(target.ref() + " is already the served version", "model");
  }
  std::shared_ptr<const ServedModel> next;
  auto standby = standby_.find(target.name);
  if (preloaded != nullptr) {
    next = std::move(preloaded);
  } else if (standby != standby_.end() && standby->second->version == target.version) {
    next = standby->second;  // hot standby: no load
    standby_.erase(standby);
    swap.from_standby = true;
  } else {
    Reap(/*wait=*/true);  // a previous version still draining holds memory
    auto loaded = LoadVersion(target, &swap.warmup);
    if (!loaded.ok() && loaded.status().code() == StatusCode::kResourceExhausted &&
        standby != standby_.end()) {
      // No room beside the active version and the standby: the standby
      // gives way (only now, so a candidate that fails for another reason
      // leaves the rollback target loaded).
      spdlog::info("lifecycle: {} does not fit beside the standby {}:{}; unloading it first",
                   target.ref(), standby->second->id, standby->second->version);
      draining_.push_back(std::move(standby->second));
      standby_.erase(standby);
      Reap(/*wait=*/true);
      PublishVersions();
      loaded = LoadVersion(target, &swap.warmup);
    }
    if (!loaded.ok() && loaded.status().code() == StatusCode::kResourceExhausted &&
        current != nullptr && current->id == target.name && canaries_.count(target.name) == 0) {
      loaded = ColdSwap(target, std::move(current), &swap);
    }
    if (!loaded.ok()) return loaded.status();
    next = std::move(loaded).value();
    swap.load_s = SecondsSince(start);
  }
  // The store first: a crash after this serves the target after restart.
  const auto decided = Steady::now();
  if (auto marked = store_->MarkActive(target.ref()); !marked.ok()) {
    if (swap.from_standby) standby_[target.name] = next;
    if (swap.cold) {  // the old version is gone: the new one serves all the same
      serving_->Replace(next);
      serving_->Release(target.name);
    }
    return marked.status();
  }
  auto old = serving_->Replace(next);
  swap.switch_ms = SecondsSince(decided) * 1000;
  if (swap.cold) {
    serving_->Release(target.name);
    swap.held_ms = SecondsSince(cold_held_at_) * 1000;
    spdlog::info("lifecycle: cold swap of {} done: new requests held {:.0f} ms", target.name,
                 swap.held_ms);
  }
  if (old != nullptr) {
    if (options_.hot_standby) {
      // A standby it replaces may still finish requests from when it served.
      if (auto prev = standby_.find(target.name); prev != standby_.end()) {
        draining_.push_back(std::move(prev->second));
      }
      standby_[target.name] = std::move(old);
    } else {
      draining_.push_back(std::move(old));
    }
  }
  Reap(/*wait=*/false);
  PublishVersions();
  return swap;
}

namespace {

// A version whose last validation failed serves only when forced.
Status ValidationGate(const ModelVersion& v, bool force) {
  if (!v.validation_failed || force) return Status::Ok();
  return Status::InvalidArgument(v.ref() + " failed its validation (outpost model show " + v.ref() +
                                     "); --force (\"force\": true) to serve it anyway",
                                 "model");
}

}  // namespace

StatusOr<std::shared_ptr<ServedModel>> ModelLifecycle::ColdSwap(
    const ModelVersion& target, std::shared_ptr<const ServedModel> current, Swap* swap) {
  const auto start = Steady::now();
  spdlog::warn(
      "lifecycle: {} does not fit beside {}:{} (no standby left to unload); cold swap: new "
      "requests wait, those in flight finish, then {} unloads",
      target.ref(), current->id, current->version, current->version);
  serving_->Hold(target.name, options_.hold_wait_ms);
  cold_held_at_ = start;
  swap->cold = true;
  // Requests in flight (streams too) finish on the old version: the only
  // references left are the serving set's and this function's.
  const auto deadline = start + std::chrono::milliseconds(options_.drain_wait_ms);
  for (;;) {
    const auto snap = current->scheduler->Snapshot();
    if (current.use_count() <= 2 && snap.active == 0 && snap.queued == 0) break;
    if (Steady::now() > deadline) {
      serving_->Release(target.name);
      swap->cold = false;
      return Status::ResourceExhausted(target.ref() + " does not fit beside " + current->version +
                                       ", and the requests on it did not finish in " +
                                       std::to_string(options_.drain_wait_ms / 1000) +
                                       " s; nothing changed");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ModelVersion old_version;
  auto old_got = store_->Get(current->id + ":" + current->version);
  if (old_got.ok()) old_version = *old_got;
  {
    auto taken = serving_->Take(target.name);
    taken.reset();
    current.reset();  // the last reference: the old version unloads here
  }
  PublishVersions();
  auto loaded = LoadVersion(target, &swap->warmup);
  if (loaded.ok()) return loaded;
  // The candidate failed: the old version comes back.
  spdlog::error("lifecycle: cold swap to {} failed ({}); reloading {}", target.ref(),
                loaded.status().message(), old_version.ref());
  std::string warmup;
  auto back = old_got.ok() ? LoadVersion(old_version, &warmup) : old_got.status();
  if (back.ok()) {
    serving_->Replace(std::move(back).value());
  } else {
    spdlog::error("lifecycle: reloading {} failed too: {}; {} serves nothing", old_version.ref(),
                  back.status().message(), target.name);
  }
  serving_->Release(target.name);
  swap->cold = false;
  PublishVersions();
  return loaded.status();
}

StatusOr<ModelLifecycle::Swap> ModelLifecycle::Activate(const std::string& ref, bool force) {
  std::lock_guard<std::mutex> lock(op_mu_);
  ModelVersion v;
  auto got = store_->Get(ref);
  Status st = got.status();
  if (st.ok()) {
    v = *got;
    if (v.state == "fetching" || v.state == "fetched" || v.state == "failed") {
      st = Status::InvalidArgument(ref + " cannot be activated: it is " + v.state +
                                       (v.error.empty() ? "" : " (" + v.error + ")"),
                                   "model");
    }
  }
  if (st.ok()) st = ValidationGate(v, force);
  if (st.ok() && options_.recheck) st = options_.recheck(v);
  if (st.ok() && canaries_.count(v.name) > 0) {
    st = Status::InvalidArgument("a canary of " + v.name + " is running (" +
                                     canaries_.at(v.name).model->version +
                                     "); promote it or roll it back first",
                                 "model");
  }
  StatusOr<Swap> swap = st.ok() ? SwitchTo(v) : StatusOr<Swap>(st);
  const std::string name = st.ok() ? v.name : ref.substr(0, ref.rfind(':'));
  if (!swap.ok()) {
    spdlog::error("lifecycle: activating {} failed: {}; the served version is unchanged", ref,
                  swap.status().message());
    Count(name, "activate", "failed");
    return swap.status();
  }
  spdlog::info("lifecycle: {} now serves {} (was {}; {} in {:.2f} s, switch {:.3f} ms)", name,
               swap->to, swap->from.empty() ? "none" : swap->from,
               swap->from_standby ? "from hot standby" : "loaded", swap->load_s, swap->switch_ms);
  Count(name, "activate", "ok");
  return swap;
}

StatusOr<ModelLifecycle::Swap> ModelLifecycle::Rollback(const std::string& name,
                                                        const std::string& reason) {
  std::lock_guard<std::mutex> lock(op_mu_);
  if (auto c = canaries_.find(name); c != canaries_.end()) {
    // During a canary, rolling back means ending it: the active version
    // never stopped serving.
    Swap swap;
    swap.model = name;
    swap.from = c->second.model->version;
    swap.to = c->second.baseline;
    swap.from_standby = true;
    const auto t0 = Steady::now();
    AbortCanary(name, reason);
    swap.switch_ms = SecondsSince(t0) * 1000;
    Count(name, "rollback", "ok");
    return swap;
  }
  auto previous = store_->PreviousOf(name);
  if (!previous.ok()) {
    Count(name, "rollback", "failed");
    return previous.status();
  }
  std::string from;
  {  // no reference kept: a cold swap waits for the last one to go
    const auto current = serving_->Find(name);
    if (current != nullptr && current->id == name) from = current->version;
  }
  auto swap = SwitchTo(*previous);
  if (!swap.ok()) {
    spdlog::error("lifecycle: rolling {} back to {} failed: {}", name, previous->version,
                  swap.status().message());
    Count(name, "rollback", "failed");
    return swap.status();
  }
  if (!from.empty()) {
    // Not a rollback target any more: the next rollback goes further back.
    if (Status st = store_->MarkRetired(name + ":" + from, "rolled back: " + reason); !st.ok()) {
      spdlog::error("lifecycle: marking {}:{} retired: {}", name, from, st.message());
    }
    // A version rolled back from is not kept hot: it unloads once its
    // requests are done.
    auto standby = standby_.find(name);
    if (standby != standby_.end() && standby->second->version == from) {
      draining_.push_back(std::move(standby->second));
      standby_.erase(standby);
    }
  }
  spdlog::warn("lifecycle: {} rolled back from {} to {} ({}; {} in {:.2f} s, switch {:.3f} ms)",
               name, from.empty() ? "none" : from, swap->to, reason,
               swap->from_standby ? "from hot standby" : "loaded", swap->load_s, swap->switch_ms);
  Count(name, "rollback", "ok");
  PublishVersions();
  return swap;
}

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
  if (v.state == "fetching" || v.state == "fetched" || v.state == "failed") {
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
  s.step_age_s = SecondsSince(run.step_start);
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

void ModelLifecycle::Reap(bool wait) {
  const auto deadline = Steady::now() + std::chrono::milliseconds(options_.drain_wait_ms);
  for (;;) {
    std::vector<std::shared_ptr<const ServedModel>> gone;
    for (auto it = draining_.begin(); it != draining_.end();) {
      if (Idle(*it)) {
        gone.push_back(std::move(*it));
        it = draining_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto& m : gone) {
      spdlog::info("lifecycle: unloading {}:{} (nothing uses it any more)", m->id, m->version);
      m.reset();  // the last reference: the scheduler stops, the memory returns
    }
    if (!wait || draining_.empty() || Steady::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (wait && !draining_.empty()) {
    spdlog::warn("lifecycle: {} old version(s) still busy after {} ms; they unload later",
                 draining_.size(), options_.drain_wait_ms);
  }
}

void ModelLifecycle::PublishVersions() {
  std::vector<std::shared_ptr<const ServedModel>> view;
  std::map<std::string, std::string> roles;
  for (const auto& m : serving_->List()) {
    if (m->version.empty()) continue;  // served from a file, not from the store
    view.push_back(m);
    roles[Key(*m)] = "active";
  }
  for (const auto& [name, m] : standby_) {
    view.push_back(m);
    roles[Key(*m)] = "standby";
  }
  for (const auto& [name, run] : canaries_) {
    view.push_back(run.model);
    roles[Key(*run.model)] = "canary";
  }
  for (const auto& m : draining_) {
    view.push_back(m);
    roles[Key(*m)] = "draining";
  }
  for (const auto& labels : published_) version_info_->GaugeWith(labels).Set(0);
  published_.clear();
  for (const auto& m : view) {
    std::vector<std::string> labels = {m->id, m->version, roles[Key(*m)]};
    version_info_->GaugeWith(labels).Set(1);
    published_.push_back(std::move(labels));
  }
  std::lock_guard<std::mutex> lock(view_mu_);
  view_.assign(view.begin(), view.end());
  roles_ = std::move(roles);
}

std::vector<ModelLifecycle::Loaded> ModelLifecycle::LoadedVersions() {
  std::lock_guard<std::mutex> lock(view_mu_);
  std::vector<Loaded> out;
  for (const auto& weak : view_) {
    const auto m = weak.lock();
    if (m == nullptr) continue;
    const auto snap = m->scheduler->Snapshot();
    out.push_back({m->id, m->version, roles_[Key(*m)], snap.active, snap.queued});
  }
  return out;
}

std::vector<std::shared_ptr<scheduler::Scheduler>> ModelLifecycle::Schedulers() {
  std::lock_guard<std::mutex> lock(view_mu_);
  std::vector<std::shared_ptr<scheduler::Scheduler>> out;
  for (const auto& weak : view_) {
    if (const auto m = weak.lock()) out.push_back(m->scheduler);
  }
  return out;
}

}  // namespace outpost::models

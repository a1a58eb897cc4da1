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

Status ModelLifecycle::ValidationGate(const ModelVersion& v, bool force) {
  if (!v.validation_failed || force) return Status::Ok();
  return Status::InvalidArgument(v.ref() + " failed its validation (outpost model show " + v.ref() +
                                     "); --force (\"force\": true) to serve it anyway",
                                 "model");
}

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
    if (!v.verified_file()) {
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

// ModelLifecycle — which version of each stored model serves, and the swaps
// between versions while requests keep coming. model_lifecycle.cc holds the
// swaps (activate, rollback) and the reaping; model_canary.cc the canaries.
//
// Activate: the candidate is loaded beside the active version (against the
// same memory ledger) and warmed up with one short generation, which must
// answer; then new requests switch to it atomically (ServingSet::Replace).
// Requests and streams that already found the old version finish on it. The
// old version stays loaded as hot standby (Options::hot_standby), so that a
// rollback is a pointer switch; a standby that is replaced, or any old
// version without hot standby, is unloaded once nothing uses it any more
// (no request holds it, none is queued or running on its scheduler).
//
// Rollback: back to the version that was active before (the store's most
// recent standby): from hot standby at once, else loaded from disk like an
// activation. The version rolled back from is retired with the reason.
//
// Shadow (a canary plan with `shadow`): before the first step, the
// candidate gets no conversations; a sample of the active version's requests
// is mirrored to it while both have spare capacity (LocalTarget::Mirror), its
// answers dropped and its outcomes judged as a step's (greedy answers are
// also compared word for word with the active's — shown, not judged: two
// quantizations may differ and both be right).
//
// Canary: the candidate is loaded and warmed up as for an activation, then
// gets a share of conversations (sticky: ServingSet::Find with the call's
// session id, user or API key), raised step by step (e.g. 5 → 25 → 50%)
// after each bake time, then promoted. At each step's end it is compared
// with the active version over the same window: its error rate, its rate of
// empty answers and its TTFT p95. Fewer than min_requests canary requests
// is no verdict: the step is extended, never passed. Worse than the active
// version past the plan's margins, or an error burst at any time (3 errors
// that are half its requests), aborts it: the canary is retired with the
// reason and the active version, never touched, serves everything.
// `Rollback` during a canary aborts it; `Promote` ends it early.
//
// Store states follow each step (model_store.h): the target becomes
// "active", the one it replaced "standby", a rolled-back one "retired". A
// crash between steps leaves the store naming the version that serves after
// a restart. Every step is logged and counted (outpost_model_swaps_total,
// outpost_model_version_info).
//
// Thread-safety: operations are serialised (one at a time; a second waits).
// Requests never wait for them. Store, serving set and registry must outlive
// the lifecycle.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "outpost/models/model_store.h"
#include "outpost/models/serving_set.h"
#include "outpost/telemetry/stat_registry.h"
#include "outpost/util/status.h"
#include "outpost/util/thread_annotations.h"

namespace outpost::models {

class ModelLifecycle {
 public:
  // Loads the GGUF at `path` to serve as `id` (the name clients use),
  // version `version`; the app's LoadModel with its serving options.
  using Loader = std::function<StatusOr<std::shared_ptr<ServedModel>>(
      const std::string& path, const std::string& id, const std::string& version)>;

  struct Options {
    bool hot_standby = true;  // keep the replaced version loaded for rollback
    // How long an operation waits for an old version's requests to finish
    // before it gives up on unloading it (it is unloaded later).
    int64_t drain_wait_ms = 120'000;
    // A cold swap (the candidate does not fit even without the standby):
    // new requests wait this long at most for the new version.
    int64_t hold_wait_ms = 300'000;
    // The warm-up generation: a chat message and at most this many tokens.
    std::string warmup_prompt = "Say hello.";
    int32_t warmup_tokens = 8;
    // Asked before an activation or a canary loads a version (not at
    // Start, not for a rollback): an error refuses it, the active version
    // untouched. The app checks the kept signature again under the current
    // policy and keys here.
    std::function<Status(const ModelVersion&)> recheck;
  };

  ModelLifecycle(ModelStore* store, ServingSet* serving, Loader loader,
                 telemetry::StatRegistry* stats, Options options);
  ModelLifecycle(ModelStore* store, ServingSet* serving, Loader loader,
                 telemetry::StatRegistry* stats)
      : ModelLifecycle(store, serving, std::move(loader), stats, Options()) {}
  ~ModelLifecycle();  // joins the reaper; the versions it holds unload

  // At start-up: `ref` is NAME (its active version) or NAME:VERSION (that
  // version, made active). Loads it, warms it up and adds it to the serving
  // set under NAME. Errors: as ModelStore::ActiveOf / MarkActive, the
  // loader's, or a warm-up that failed.
  StatusOr<std::shared_ptr<const ServedModel>> Start(const std::string& ref);

  // What one activation or rollback did.
  struct Swap {
    std::string model;          // the id clients use
    std::string from;           // the version that served before ("" none)
    std::string to;             // the version that serves now
    bool from_standby = false;  // the target was loaded already (hot standby)
    double load_s = 0;          // loading and warming up the target (0 from standby)
    double switch_ms = 0;       // from the decision to new requests reaching the target
    std::string warmup;         // the warm-up answer
    bool cold = false;          // the old version unloaded first, new requests held meanwhile
    double held_ms = 0;         // how long new requests were held (cold only)
  };

  // NAME:VERSION becomes the served version of NAME. Errors: NotFound (no
  // such version), InvalidArgument (not verified; the warm-up failed or
  // answered nothing), ResourceExhausted (does not fit even alone, or the
  // old version's requests did not finish in drain_wait_ms), FailedValidation-like InvalidArgument
  // when its last validation failed and not `force`. On any error the active version keeps serving,
  // untouched.
  //
  // When the candidate does not fit beside the active version even once the
  // standby has given way, the swap is cold: new requests for the name are
  // held (ServingSet::Hold), those in flight finish on the old version, it
  // unloads, the candidate loads and warms up, and the held requests go to
  // it. No stream is cut; the stall is the load time. A candidate that then
  // fails to load gives its place back to the old version, reloaded.
  StatusOr<Swap> Activate(const std::string& ref, bool force = false);
  // NAME goes back to the version active before the current one; the
  // current one is retired with `reason`. Errors: NotFound (nothing to roll
  // back to), as Activate.
  StatusOr<Swap> Rollback(const std::string& name, const std::string& reason);

  struct CanaryPlan {
    std::vector<int32_t> steps = {5, 25, 50};  // percent of conversations, rising, < 100
    int64_t bake_ms = 600'000;                 // each step lasts at least this
    int64_t min_requests = 50;                 // canary requests a step needs for a verdict
    double max_error_increase = 0.05;          // error or empty rate above the active's + this
    double max_ttft_ratio = 1.5;               // TTFT p95 above the active's × this
    // Decode tokens/s below the active's × this (judged once each side has
    // decoded kDecodeSample tokens in the step).
    double min_decode_ratio = 0.5;
    // A shadow phase first (0: none): this percent of the active version's
    // requests is mirrored to the candidate when both have spare capacity,
    // its answers dropped; judged like a step, then the steps begin (none:
    // the promotion follows). For quiet boxes and models no user should
    // see before they are proven.
    int32_t shadow = 0;
  };
  // Tokens each version must have decoded in a step before its decode rate
  // is judged.
  static constexpr int64_t kDecodeSample = 64;
  struct CanaryStatus {
    std::string model, version, baseline;  // baseline: the active version
    std::string phase;                     // "shadow" or "live"
    int32_t percent = 0;                   // of conversations (0 in the shadow phase)
    int32_t shadow_percent = 0;            // of requests mirrored (shadow phase)
    size_t step = 0, steps = 0;
    double step_age_s = 0;
    VersionOutcomes::Snapshot canary, active;  // in this step
    double canary_ttft_p95_s = -1, active_ttft_p95_s = -1;
    double canary_decode_tps = -1, active_decode_tps = -1;  // < 0: too few tokens yet
    std::string last_decision;  // what the last evaluation said, and why
  };
  // Starts a canary of NAME:VERSION. Errors: as Activate; InvalidArgument
  // for a plan out of range (naming the field) or a canary already running.
  StatusOr<CanaryStatus> StartCanary(const std::string& ref, const CanaryPlan& plan,
                                     bool force = false);
  // The canary of NAME becomes the active version now. Errors: NotFound (no
  // canary running).
  StatusOr<Swap> Promote(const std::string& name);
  std::vector<CanaryStatus> Canaries();

  // One loaded version, for /admin/models and /ready.
  struct Loaded {
    std::string model, version;
    std::string role;  // "active", "standby" or "draining"
    int32_t active_requests = 0, queued_requests = 0;
  };
  std::vector<Loaded> LoadedVersions();
  // Every loaded version's scheduler (the watchdog; Stop() at shutdown).
  std::vector<std::shared_ptr<scheduler::Scheduler>> Schedulers();

  ModelStore* store() const { return store_; }

 private:
  // Loads and warms up `v` (does not serve it yet).
  StatusOr<std::shared_ptr<ServedModel>> LoadVersion(const ModelVersion& v, std::string* warmup)
      OUTPOST_REQUIRES(op_mu_);
  // `preloaded`: the target already loaded and warm (a promoted canary).
  StatusOr<Swap> SwitchTo(const ModelVersion& target,
                          std::shared_ptr<const ServedModel> preloaded = nullptr)
      OUTPOST_REQUIRES(op_mu_);
  // Unloads the draining versions nothing uses any more; with `wait`, waits
  // up to drain_wait_ms for them.
  void Reap(bool wait) OUTPOST_REQUIRES(op_mu_);
  void Count(const std::string& model, const std::string& action, const std::string& result);
  // OK unless `v`'s last validation failed and it is not forced: an
  // activation's and a canary's gate.
  static Status ValidationGate(const ModelVersion& v, bool force);
  void PublishVersions() OUTPOST_REQUIRES(op_mu_);
  // Reaper thread: unloads drained versions between operations and
  // evaluates the canaries.
  void ReapLoop();
  struct CanaryRun {
    std::shared_ptr<const ServedModel> model;
    std::string baseline;  // the active version when it started
    CanaryPlan plan;
    size_t step = 0;
    bool shadow_phase = false;  // before steps[0]
    std::chrono::steady_clock::time_point step_start, next_verdict;
    VersionOutcomes::Snapshot canary0, active0;  // at the step's start
    std::string last_decision;
  };
  void EvaluateCanaries() OUTPOST_REQUIRES(op_mu_);
  void StartStep(CanaryRun* run, size_t step) OUTPOST_REQUIRES(op_mu_);
  // Ends the canary of `name`, retiring its version with `reason`.
  void AbortCanary(const std::string& name, const std::string& reason) OUTPOST_REQUIRES(op_mu_);
  StatusOr<Swap> PromoteLocked(const std::string& name) OUTPOST_REQUIRES(op_mu_);
  // The cold swap of SwitchTo (see Activate).
  StatusOr<std::shared_ptr<ServedModel>> ColdSwap(const ModelVersion& target,
                                                  std::shared_ptr<const ServedModel> current,
                                                  Swap* swap) OUTPOST_REQUIRES(op_mu_);
  // Copies the running canaries into the view Canaries() reads.
  void PublishCanaryView() OUTPOST_REQUIRES(op_mu_);
  CanaryStatus StatusOf(const std::string& name, const CanaryRun& run) const;

  ModelStore* const store_;
  ServingSet* const serving_;
  const Loader loader_;
  const Options options_;
  telemetry::Family* const swaps_;
  telemetry::Family* const version_info_;
  telemetry::Family* const canary_decisions_;
  telemetry::Family* const canary_share_;
  std::map<std::string, CanaryRun> canaries_ OUTPOST_GUARDED_BY(op_mu_);
  std::chrono::steady_clock::time_point cold_held_at_ OUTPOST_GUARDED_BY(op_mu_);
  std::mutex op_mu_;  // one operation at a time
  std::map<std::string, std::shared_ptr<const ServedModel>> standby_ OUTPOST_GUARDED_BY(op_mu_);
  std::vector<std::shared_ptr<const ServedModel>> draining_ OUTPOST_GUARDED_BY(op_mu_);
  // Guards the copies the accessors read (LoadedVersions, Schedulers) so
  // they never wait behind a long operation.
  mutable std::mutex view_mu_;
  // Weak: a view never keeps a version loaded.
  std::vector<std::weak_ptr<const ServedModel>> view_ OUTPOST_GUARDED_BY(view_mu_);
  std::map<std::string, std::string> roles_ OUTPOST_GUARDED_BY(view_mu_);  // "id@version" → role
  std::vector<CanaryStatus> canary_view_ OUTPOST_GUARDED_BY(view_mu_);
  std::vector<std::vector<std::string>> published_ OUTPOST_GUARDED_BY(op_mu_);  // info series at 1
  std::mutex reaper_mu_;
  std::condition_variable reaper_cv_;
  bool stopping_ OUTPOST_GUARDED_BY(reaper_mu_) = false;
  std::thread reaper_;
};

}  // namespace outpost::models

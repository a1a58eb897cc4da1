// ServingSet — the models this process serves, by id.
//
// Owned by the app; read by HTTP workers and the router's local target.
// Internally synchronised. Entries are immutable and shared: a caller that
// found a model keeps it (and its scheduler) alive until it lets go, so a
// model replaced later (hot swap) drains instead of vanishing mid-request.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "outpost/engine/model_info.h"
#include "outpost/models/embedding_service.h"
#include "outpost/models/memory_ledger.h"
#include "outpost/models/version_outcomes.h"
#include "outpost/scheduler/capacity.h"
#include "outpost/scheduler/scheduler.h"
#include "outpost/telemetry/genai_stats.h"
#include "outpost/util/thread_annotations.h"

namespace outpost::models {

struct ServedModel {
  // Runs on_unload (the lifecycle's last reference is gone: the version's
  // gauges go to 0) once the scheduler has stopped.
  ~ServedModel() {
    if (scheduler) scheduler->Stop();
    if (on_unload) on_unload();
  }
  // Declared before the scheduler, so it is destroyed after it: the memory is
  // handed back only once the engine that used it is gone.
  std::shared_ptr<MemoryReservation> memory;
  std::shared_ptr<MemoryReservation> embeddings_memory;
  std::string id;
  std::string version;     // the store's version ("" when served from a file)
  engine::ModelInfo info;  // from the GGUF
  int64_t created = 0;     // unix seconds, when loaded
  std::string system_fingerprint;
  std::shared_ptr<scheduler::Scheduler> scheduler;  // holds the engine for this model
  std::shared_ptr<EmbeddingService> embeddings;     // null unless loaded for embeddings
  // The OpenTelemetry GenAI histograms: the scheduler records completions,
  // api/ records embeddings. Null in tests that build a ServedModel by hand.
  std::shared_ptr<telemetry::GenAiServerStats> genai;
  scheduler::CapacityPlan plan;
  // What its requests came to (the canary compares versions by it).
  std::shared_ptr<VersionOutcomes> outcomes = std::make_shared<VersionOutcomes>();
  std::function<void()> on_unload;
};

// The labels of a served model's own series (scheduler and model stats): one
// series per model version, so that a canary's two versions stay apart.
inline std::vector<std::string> ServedModelLabelNames() {
  return {"model", "version"};
}
inline std::vector<std::string> ServedModelLabels(const ServedModel& m) {
  return {m.id, m.version};
}

class ServingSet {
 public:
  // `ledger` (may be null) is the memory budget the models are loaded
  // against, reported with them; it must outlive the set.
  explicit ServingSet(const MemoryLedger* ledger = nullptr) : ledger_(ledger) {}
  const MemoryLedger* ledger() const { return ledger_; }

  void Add(std::shared_ptr<const ServedModel> m);
  // Puts `m` where the model with its id was (new requests get it from now
  // on) and returns that one, or null after adding `m` when there was none.
  // Requests that already found the old model keep it.
  std::shared_ptr<const ServedModel> Replace(std::shared_ptr<const ServedModel> m);
  // Empty id: the first (default) model. Null when unknown.
  std::shared_ptr<const ServedModel> Find(const std::string& id) const;
  // As Find, but during a canary of that model a share of sticky keys gets
  // the canary: bucket = FNV-1a(key) mod 10000 < share (basis points), so
  // one key (a conversation) always gets the same version. An empty key
  // draws its bucket from a counter.
  std::shared_ptr<const ServedModel> Find(const std::string& id,
                                          const std::string& sticky_key) const;
  // A cold swap (the new version does not fit beside the old one): while
  // `id` is held, the request path's Find(id, sticky_key) waits — up to
  // `max_wait_ms`, then it returns what serves then, possibly null — for
  // Release(id), so requests queue instead of failing while the old version
  // unloads and the new one loads. Find(id) (status pages, the lifecycle)
  // never waits.
  void Hold(const std::string& id, int64_t max_wait_ms);
  void Release(const std::string& id);
  // Removes the model with this id (its place is kept for the Replace that
  // follows) and returns it; null when none.
  std::shared_ptr<const ServedModel> Take(const std::string& id);
  // Requests waiting in Find(id, key) for a Release.
  int32_t waiting() const;

  // Starts (or changes the share of) a canary for m->id; share_bp 0-10000.
  // `shadow_bp` (0-10000): the share of the active version's requests that
  // are also mirrored to the canary (ShadowOf), whose answers are dropped —
  // the canary's shadow phase, with share_bp 0.
  void SetCanary(std::shared_ptr<const ServedModel> m, int32_t share_bp, int32_t shadow_bp = 0);
  // During a shadow phase of `id`: the candidate when this request is in
  // the sample (exactly shadow_bp of every 10000 calls, spread evenly), else
  // null. Draws from a counter, so call it once per request.
  std::shared_ptr<const ServedModel> ShadowOf(const std::string& id) const;
  // Ends the canary of `id`; returns its model (null when there was none).
  std::shared_ptr<const ServedModel> ClearCanary(const std::string& id);
  std::vector<std::shared_ptr<const ServedModel>> List() const;
  // Not ready while models load and once shutdown begins (/ready, 503s).
  void SetReady(bool ready);
  bool ready() const;

 private:
  const MemoryLedger* const ledger_;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<const ServedModel>> models_ OUTPOST_GUARDED_BY(mu_);
  struct Canary {
    std::shared_ptr<const ServedModel> model;
    int32_t share_bp = 0;
    int32_t shadow_bp = 0;
    mutable uint64_t shadow_draws = 0;  // ShadowOf's counter
  };
  std::vector<Canary> canaries_ OUTPOST_GUARDED_BY(mu_);
  mutable uint64_t unkeyed_ OUTPOST_GUARDED_BY(mu_) = 0;
  struct Held {
    size_t index = 0;  // where its model was (Take keeps the place)
    int64_t max_wait_ms = 0;
  };
  std::map<std::string, Held> held_ OUTPOST_GUARDED_BY(mu_);
  mutable std::condition_variable released_;
  mutable int32_t waiting_ OUTPOST_GUARDED_BY(mu_) = 0;
  bool ready_ OUTPOST_GUARDED_BY(mu_) = false;
};

}  // namespace outpost::models

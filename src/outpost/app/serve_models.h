// The models `outpost serve` loads at start-up: from GGUF files, or — when
// `model` names a version in the model store (NAME or NAME:VERSION) — from the
// store through the model lifecycle, which then also answers /admin/ for
// activations and rollbacks while serving.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "outpost/api/admin_api.h"
#include "outpost/app/config.h"
#include "outpost/fleet/fleet_agent.h"
#include "outpost/models/memory_ledger.h"
#include "outpost/models/model_lifecycle.h"
#include "outpost/models/model_store.h"
#include "outpost/models/serving_set.h"
#include "outpost/scheduler/scheduler.h"
#include "outpost/telemetry/stat_registry.h"
#include "outpost/util/status.h"

namespace outpost::audit {
class AuditLog;
}  // namespace outpost::audit

namespace outpost::app {

// The ids the configured models will be served as, in order, known before
// any loads: a store reference's model name, else ModelIdFor the file's
// options. For checking what names a model (pinned_prompts[i].model) at start.
std::vector<std::string> ModelIdsToServe(const ServeConfig& cfg);

class ServedModels {
 public:
  // Opens the model store when the first model is a store reference, an
  // admin key or a fleet desired state is configured, and builds the
  // lifecycle, the admin API and the fleet agent on it. Errors: InvalidArgument naming model_store
  // or admin_key_file. `serving`, `ledger`, `stats` and `audit` (may be null) must outlive it.
  static StatusOr<std::unique_ptr<ServedModels>> Open(const ServeConfig& cfg,
                                                      models::ServingSet* serving,
                                                      models::MemoryLedger* ledger,
                                                      telemetry::StatRegistry* stats,
                                                      audit::AuditLog* audit);

  // Loads every configured model into the serving set; on error names the
  // model that failed (whatever loaded stays loaded: Stop() it). Then starts
  // the fleet agent, if configured.
  Status Load();
  // "'id', 'id'" for the log: the models Load loaded; count: how many.
  const std::string& ids() const { return ids_; }
  size_t count() const { return id_list_.size(); }
  // The /admin/ handler; null when there is no store.
  api::AdminApi* admin() const { return admin_.get(); }
  // Every loaded model's scheduler, from files and from the store.
  std::vector<std::shared_ptr<scheduler::Scheduler>> Schedulers() const;
  // Stops the fleet agent, then every scheduler.
  void Stop();

 private:
  ServedModels(const ServeConfig& cfg, models::ServingSet* serving, models::MemoryLedger* ledger,
               telemetry::StatRegistry* stats)
      : cfg_(cfg), serving_(serving), ledger_(ledger), stats_(stats) {}

  const ServeConfig cfg_;
  models::ServingSet* const serving_;
  models::MemoryLedger* const ledger_;
  telemetry::StatRegistry* const stats_;
  std::unique_ptr<models::ModelStore> store_;
  std::unique_ptr<models::ModelLifecycle> lifecycle_;
  std::unique_ptr<api::AdminApi> admin_;
  std::unique_ptr<fleet::FleetAgent> fleet_;
  std::vector<std::shared_ptr<scheduler::Scheduler>> file_schedulers_;
  std::string ids_;
  std::vector<std::string> id_list_;
};

// True when cfg.model names a store version rather than a file: no such file
// exists and it reads as NAME or NAME:VERSION.
bool ModelIsStoreRef(const ServeConfig& cfg);

}  // namespace outpost::app

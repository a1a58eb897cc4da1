// ModelCatalog — the models this process serves, by id.
//
// Owned by the app; read by HTTP workers. Internally synchronised. Entries are
// added when a model finishes loading; later issues add hot swap (replace an
// entry while requests on the old one drain) — the shared_ptr keeps a replaced
// model alive until its last request ends.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "outpost/engine/model.h"
#include "outpost/scheduler/capacity.h"
#include "outpost/scheduler/scheduler.h"

namespace outpost::api {

struct ServedModel {
  std::string id;
  int64_t created = 0;  // unix seconds, when loaded
  std::string system_fingerprint;
  std::shared_ptr<scheduler::Scheduler> scheduler;  // holds the engine for this model
  scheduler::CapacityPlan plan;
};

class ModelCatalog {
 public:
  void Add(ServedModel m);
  // Empty id: the first (default) model. nullopt when unknown.
  std::optional<ServedModel> Find(const std::string& id) const;
  std::vector<ServedModel> List() const;
  void SetReady(bool ready);
  bool ready() const;

 private:
  mutable std::mutex mu_;
  std::vector<ServedModel> models_;
  bool ready_ = false;
};

}  // namespace outpost::api

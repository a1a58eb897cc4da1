#include "outpost/api/model_catalog.h"

namespace outpost::api {

void ModelCatalog::Add(ServedModel m) {
  std::lock_guard<std::mutex> lock(mu_);
  models_.push_back(std::move(m));
}

std::optional<ServedModel> ModelCatalog::Find(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (models_.empty()) return std::nullopt;
  if (id.empty()) return models_.front();
  for (const auto& m : models_) {
    if (m.id == id) return m;
  }
  return std::nullopt;
}

std::vector<ServedModel> ModelCatalog::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  return models_;
}

void ModelCatalog::SetReady(bool ready) {
  std::lock_guard<std::mutex> lock(mu_);
  ready_ = ready;
}

bool ModelCatalog::ready() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ready_;
}

}  // namespace outpost::api

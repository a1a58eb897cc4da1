#include "outpost/models/serving_set.h"

namespace outpost::models {

void ServingSet::Add(std::shared_ptr<const ServedModel> m) {
  std::lock_guard<std::mutex> lock(mu_);
  models_.push_back(std::move(m));
}

std::shared_ptr<const ServedModel> ServingSet::Replace(std::shared_ptr<const ServedModel> m) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& slot : models_) {
    if (slot->id == m->id) {
      slot.swap(m);
      return m;
    }
  }
  models_.push_back(std::move(m));
  return nullptr;
}

std::shared_ptr<const ServedModel> ServingSet::Find(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (models_.empty()) return nullptr;
  if (id.empty()) return models_.front();
  for (const auto& m : models_) {
    if (m->id == id) return m;
  }
  return nullptr;
}

std::vector<std::shared_ptr<const ServedModel>> ServingSet::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  return models_;
}

void ServingSet::SetReady(bool ready) {
  std::lock_guard<std::mutex> lock(mu_);
  ready_ = ready;
}

bool ServingSet::ready() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ready_;
}

}  // namespace outpost::models

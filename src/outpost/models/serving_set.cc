#include "outpost/models/serving_set.h"

#include <chrono>

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
  if (auto h = held_.find(m->id); h != held_.end() && h->second.index <= models_.size()) {
    models_.insert(models_.begin() + static_cast<std::ptrdiff_t>(h->second.index), std::move(m));
    return nullptr;
  }
  models_.push_back(std::move(m));
  return nullptr;
}

void ServingSet::Hold(const std::string& id, int64_t max_wait_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  Held h;
  h.max_wait_ms = max_wait_ms;
  h.index = models_.size();
  for (size_t i = 0; i < models_.size(); ++i) {
    if (models_[i]->id == id) h.index = i;
  }
  held_[id] = h;
}

void ServingSet::Release(const std::string& id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    held_.erase(id);
  }
  released_.notify_all();
}

std::shared_ptr<const ServedModel> ServingSet::Take(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = models_.begin(); it != models_.end(); ++it) {
    if ((*it)->id == id) {
      auto m = std::move(*it);
      models_.erase(it);
      return m;
    }
  }
  return nullptr;
}

int32_t ServingSet::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiting_;
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

namespace {

uint32_t Fnv1a(const std::string& s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

}  // namespace

std::shared_ptr<const ServedModel> ServingSet::Find(const std::string& id,
                                                    const std::string& sticky_key) const {
  std::unique_lock<std::mutex> lock(mu_);
  // The id a hold is on: the default model is the one at index 0.
  auto hold = [&]() -> const Held* {
    for (const auto& [name, h] : held_) {
      if (id.empty() ? h.index == 0 : name == id) return &h;
    }
    return nullptr;
  };
  if (const Held* h = hold(); h != nullptr) {
    ++waiting_;
    released_.wait_for(lock, std::chrono::milliseconds(h->max_wait_ms),
                       [&] { return hold() == nullptr; });
    --waiting_;
  }
  if (models_.empty()) return nullptr;
  std::shared_ptr<const ServedModel> base = id.empty() ? models_.front() : nullptr;
  for (size_t i = 0; base == nullptr && i < models_.size(); ++i) {
    if (models_[i]->id == id) base = models_[i];
  }
  if (base == nullptr) return nullptr;
  for (const auto& c : canaries_) {
    if (c.model->id != base->id) continue;
    const uint32_t bucket = sticky_key.empty()
                                ? static_cast<uint32_t>((unkeyed_++ * 7919u) % 10000u)
                                : Fnv1a(sticky_key) % 10000u;
    if (bucket < static_cast<uint32_t>(c.share_bp)) return c.model;
  }
  return base;
}

void ServingSet::SetCanary(std::shared_ptr<const ServedModel> m, int32_t share_bp,
                           int32_t shadow_bp) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& c : canaries_) {
    if (c.model->id == m->id) {
      c.model = std::move(m);
      c.share_bp = share_bp;
      c.shadow_bp = shadow_bp;
      return;
    }
  }
  Canary c;
  c.model = std::move(m);
  c.share_bp = share_bp;
  c.shadow_bp = shadow_bp;
  canaries_.push_back(std::move(c));
}

std::shared_ptr<const ServedModel> ServingSet::ShadowOf(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& c : canaries_) {
    if (c.model->id != id || c.shadow_bp <= 0) continue;
    // Call n is in the sample when floor(n·bp/10000) steps up: exactly bp
    // of every 10000, evenly spread.
    const uint64_t n = c.shadow_draws++;
    const auto bp = static_cast<uint64_t>(c.shadow_bp);
    if ((n + 1) * bp / 10000 > n * bp / 10000) return c.model;
    return nullptr;
  }
  return nullptr;
}

std::shared_ptr<const ServedModel> ServingSet::ClearCanary(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = canaries_.begin(); it != canaries_.end(); ++it) {
    if (it->model->id == id) {
      auto m = std::move(it->model);
      canaries_.erase(it);
      return m;
    }
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

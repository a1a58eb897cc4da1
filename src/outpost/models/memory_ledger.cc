#include "outpost/models/memory_ledger.h"

#include "outpost/util/units.h"

namespace outpost::models {

MemoryReservation::~MemoryReservation() {
  ledger_->Release(owner_);
}

uint64_t MemoryLedger::reserved() const {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t n = 0;
  for (const auto& [owner, bytes] : held_) n += bytes;
  return n;
}

uint64_t MemoryLedger::available() const {
  const uint64_t r = reserved();
  return r >= budget_ ? 0 : budget_ - r;
}

std::map<std::string, uint64_t> MemoryLedger::Entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_;
}

StatusOr<std::unique_ptr<MemoryReservation>> MemoryLedger::Reserve(const std::string& owner,
                                                                   uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (held_.count(owner) != 0) {
    return Status::InvalidArgument("the model id '" + owner +
                                       "' is already loaded; give the second one another id "
                                       "(--model ID=PATH, or models[].id)",
                                   "model");
  }
  uint64_t used = 0;
  std::string others;
  for (const auto& [o, b] : held_) {
    used += b;
    others += (others.empty() ? "" : ", ") + o + " " + util::FormatBytes(b);
  }
  if (used + bytes > budget_) {
    return Status::ResourceExhausted(
        "'" + owner + "' needs " + util::FormatBytes(bytes) + " (planned peak with headroom) but " +
        util::FormatBytes(budget_ > used ? budget_ - used : 0) + " of the memory budget " +
        util::FormatBytes(budget_) + " remain" +
        (others.empty() ? std::string() : " (held by " + others + ")") +
        "; raise memory_budget, or lower parallel or ctx_size");
  }
  held_[owner] = bytes;
  return std::make_unique<MemoryReservation>(this, owner, bytes);
}

void MemoryLedger::Release(const std::string& owner) {
  std::lock_guard<std::mutex> lock(mu_);
  held_.erase(owner);
}

}  // namespace outpost::models

// MemoryLedger — one memory budget for everything this process loads.
//
// Every model (and later every version of one, during a swap or a canary) is
// planned against what the ledger still has, and holds a reservation of its
// planned peak with headroom for as long as it is loaded. A second model that
// does not fit beside the first is refused with both numbers, instead of the
// two together overrunning the box. Internally synchronised.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "outpost/util/status.h"
#include "outpost/util/thread_annotations.h"

namespace outpost::models {

class MemoryLedger;

// Bytes held for one owner; released when destroyed.
class MemoryReservation {
 public:
  MemoryReservation(MemoryLedger* ledger, std::string owner, uint64_t bytes)
      : ledger_(ledger), owner_(std::move(owner)), bytes_(bytes) {}
  ~MemoryReservation();
  MemoryReservation(const MemoryReservation&) = delete;
  MemoryReservation& operator=(const MemoryReservation&) = delete;
  uint64_t bytes() const { return bytes_; }

 private:
  MemoryLedger* const ledger_;
  const std::string owner_;
  const uint64_t bytes_;
};

class MemoryLedger {
 public:
  explicit MemoryLedger(uint64_t budget_bytes) : budget_(budget_bytes) {}

  uint64_t budget() const { return budget_; }
  uint64_t reserved() const;
  uint64_t available() const;                       // budget - reserved
  std::map<std::string, uint64_t> Entries() const;  // reserved bytes by owner

  // Holds `bytes` for `owner` until the returned reservation is destroyed
  // (which must happen before the ledger is). Errors: ResourceExhausted
  // naming the owner, the bytes asked for, and what the others hold;
  // InvalidArgument when `owner` already holds a reservation.
  StatusOr<std::unique_ptr<MemoryReservation>> Reserve(const std::string& owner, uint64_t bytes);

 private:
  friend class MemoryReservation;
  void Release(const std::string& owner);

  const uint64_t budget_;
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> held_ OUTPOST_GUARDED_BY(mu_);
};

}  // namespace outpost::models

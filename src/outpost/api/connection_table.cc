#include "outpost/api/connection_table.h"

namespace outpost::api {

ConnectionTable::Admission ConnectionTable::Admit(uint64_t id, const std::string& client,
                                                  int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  Admission a;
  auto drop = [&](uint64_t victim) {
    auto it = entries_.find(victim);
    if (--per_client_[it->second.client] == 0) per_client_.erase(it->second.client);
    entries_.erase(it);  // Remove() for it later finds nothing
  };
  // One shed at most per admission: a connection over both limits replaces
  // the oldest idle one of its own client when there is one, which also
  // frees a place in the total.
  auto pc = per_client_.find(client);
  if (pc != per_client_.end() && pc->second >= limits_.max_per_client) {
    a.limit = "max_connections_per_client";
    const uint64_t victim = OldestIdle(&client);
    if (victim == 0) return a;
    drop(victim);
    a.shed = victim;
  }
  if (entries_.size() >= limits_.max_total) {
    a.limit = "max_connections";
    if (a.shed != 0) return a;  // cannot happen: the per-client shed freed a place
    const uint64_t victim = OldestIdle(nullptr);
    if (victim == 0) return a;
    drop(victim);
    a.shed = victim;
  }
  entries_[id] = Entry{client, Phase::kIdle, now_ms};
  ++per_client_[client];
  a.admitted = true;
  return a;
}

void ConnectionTable::SetPhase(uint64_t id, Phase phase, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  it->second.phase = phase;
  it->second.since_ms = now_ms;
}

void ConnectionTable::Remove(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  if (--per_client_[it->second.client] == 0) per_client_.erase(it->second.client);
  entries_.erase(it);
}

uint64_t ConnectionTable::OldestIdle(const std::string* client) const {
  uint64_t best = 0;
  int64_t best_since = 0;
  for (const auto& [id, e] : entries_) {
    if (e.phase != Phase::kIdle || (client != nullptr && e.client != *client)) continue;
    if (best == 0 || e.since_ms < best_since) {
      best = id;
      best_since = e.since_ms;
    }
  }
  return best;
}

size_t ConnectionTable::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

size_t ConnectionTable::active() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [id, e] : entries_) n += e.phase == Phase::kActive ? 1 : 0;
  return n;
}

size_t ConnectionTable::from(const std::string& client) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = per_client_.find(client);
  return it == per_client_.end() ? 0 : it->second;
}

}  // namespace outpost::api

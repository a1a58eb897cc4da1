// ConnectionTable — which client connections the HTTP front holds, and
// which one to shed when a limit is hit.
//
// Limits: connections in total and per client address. A new connection over
// a limit takes the place of the least valuable one in its scope: a
// connection with no request in progress (idle between keep-alive requests,
// or still sending its header) goes first, the one quiet for longest first;
// a connection whose request is being answered (a stream, a queued
// generation) is never shed. When every connection in the scope is busy the
// new one is refused. Pure bookkeeping: the front closes what this names.
// Internally synchronised; called from the front's I/O threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "outpost/util/thread_annotations.h"

namespace outpost::api {

class ConnectionTable {
 public:
  struct Limits {
    size_t max_total = 8192;
    size_t max_per_client = 1024;
  };
  enum class Phase {
    kIdle,    // between requests (keep-alive) or reading a request head/body
    kActive,  // a request is being answered
  };
  struct Admission {
    bool admitted = false;
    uint64_t shed = 0;       // a connection to close to make room, 0: none
    const char* limit = "";  // "max_connections" or "max_connections_per_client" when one was hit
  };

  explicit ConnectionTable(Limits limits) : limits_(limits) {}

  // A new connection from `client` at time `now_ms`. When admitted it gets
  // the id `id` (nonzero, unique) in phase kIdle.
  Admission Admit(uint64_t id, const std::string& client, int64_t now_ms);
  void SetPhase(uint64_t id, Phase phase, int64_t now_ms);
  void Remove(uint64_t id);

  size_t size() const;
  size_t active() const;
  size_t from(const std::string& client) const;

 private:
  struct Entry {
    std::string client;
    Phase phase = Phase::kIdle;
    int64_t since_ms = 0;
  };
  // The idle connection quiet for longest, among all or one client's; 0: none.
  uint64_t OldestIdle(const std::string* client) const OUTPOST_REQUIRES(mu_);

  const Limits limits_;
  mutable std::mutex mu_;
  std::map<uint64_t, Entry> entries_ OUTPOST_GUARDED_BY(mu_);
  std::map<std::string, size_t> per_client_ OUTPOST_GUARDED_BY(mu_);
};

}  // namespace outpost::api

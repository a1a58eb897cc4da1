// Spool — the uplink's store and forward: records waiting for the centre's
// acknowledgement, in one SQLite file (WAL, synchronous=FULL), bounded.
//
// Guarantees:
// - Every record gets a sequence number in the same transaction that stores
//   it; numbers rise across restarts and are never reused (the next one is
//   kept in the file). With the box id and the boot id it is the record's
//   idempotency key: a receiver that drops replays applies each record once.
// - A record leaves only by Ack() (the centre has it), by merging (older
//   summaries folded into a later one: the later one's `first_seq` then
//   covers the folded range), or by being dropped when the spool is full —
//   and then a gap record (kind "gap") takes its place, saying which sequence
//   numbers and which time range were lost and why. So every number from 1 to
//   the newest is acknowledged, pending, folded into a pending or
//   acknowledged record, or inside a gap.
// - What is committed survives kill -9 and power loss; the acknowledged
//   position (the count and the highest sequence acknowledged) lives in the
//   file.
//
// A full disk must not wedge the spool: deleting a row in WAL mode needs
// space too. So the spool keeps a reserve file beside its own (128 KiB) and
// gives it back to the filesystem when SQLite reports SQLITE_FULL; the space
// lets deletes and a WAL checkpoint through, and the reserve is taken again
// once there is room. An acknowledgement that still cannot be written is kept
// in memory (the record is not sent again by this process) and retried.
//
// The bound is on the records' bytes (`max_bytes`); the file itself is
// capped near twice that (PRAGMA max_page_count). Past 80% the spool asks its
// merger to fold summaries of the same boot into hourly, then daily ones;
// past 100% it drops the oldest records. A full disk (SQLITE_FULL) is
// handled the same way: drop the oldest, retry; a record that still cannot
// be written is counted and reported in the next gap record.
//
// Thread-safety: internally synchronised (one connection behind a mutex).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "outpost/util/status.h"
#include "outpost/util/thread_annotations.h"

struct sqlite3;

namespace outpost::util {
class SqliteDb;
}

namespace outpost::telemetry {

struct SpoolRecord {
  int64_t seq = 0;
  int64_t first_seq = 0;  // == seq unless earlier summaries were folded into it
  std::string kind;       // "summary" | "event" | "gap"
  std::string boot_id;
  int64_t time_ms = 0;  // Unix ms when it was made (a summary: its window's end)
  std::string body;     // JSON
};

struct SpoolStats {
  int64_t records = 0;
  uint64_t bytes = 0;  // the records' bodies
  uint64_t max_bytes = 0;
  int64_t next_seq = 1;
  int64_t newest_seq = 0;     // the newest pending record; 0: none
  int64_t acked_records = 0;  // ever, across restarts
  int64_t acked_seq_max = 0;  // the highest sequence number acknowledged
  int64_t dropped_records = 0;
  int64_t gap_records = 0;
  int64_t merged_records = 0;
  int64_t unrecorded = 0;  // records never written (disk full), since start
};

class Spool {
 public:
  // Folds an older summary body into a newer one (both of one boot); returns
  // the merged body. Summaries are cumulative, so a merge loses resolution,
  // not totals.
  using Merger = std::function<std::string(const std::string& older, const std::string& newer)>;

  // Opens or creates the spool at `path` (its directory must exist).
  // Errors: Unavailable naming the path and SQLite's message.
  static StatusOr<std::unique_ptr<Spool>> Open(const std::string& path, uint64_t max_bytes,
                                               Merger merger);
  ~Spool();
  Spool(const Spool&) = delete;
  Spool& operator=(const Spool&) = delete;

  // Stores a record; returns its sequence number. Makes room first when
  // needed (see above). Errors: ResourceExhausted when the disk stays full
  // (the record is counted for the next gap record); Unavailable for any
  // other SQLite failure (nothing is dropped for it).
  StatusOr<int64_t> Append(const std::string& kind, const std::string& boot_id, int64_t time_ms,
                           const std::string& body);

  // The oldest (or the newest) pending record, marked in flight: until
  // Ack() or Release(), merging and dropping leave it alone, so what the
  // centre receives is exactly what is acknowledged. One in flight at a time.
  std::optional<SpoolRecord> Take(bool newest);
  // The centre has the record: delete it and advance the acknowledged
  // position, in one transaction. Unknown sequence numbers are ignored.
  Status Ack(int64_t seq);
  // The send failed; the record stays pending.
  void Release(int64_t seq);
  // The centre refused the record for good (OTLP: a 4xx other than 429):
  // it leaves the spool, and unless it was a gap record itself a gap record
  // naming it and `reason` takes its place.
  Status Reject(int64_t seq, const std::string& reason, const std::string& boot_id, int64_t now_ms);

  // A persistent string value in the spool's file (the box id, the last
  // boot id).
  std::string Meta(const std::string& key);
  Status SetMeta(const std::string& key, const std::string& value);

  SpoolStats Stats();
  const std::string& path() const { return path_; }

 private:
  Spool(std::unique_ptr<util::SqliteDb> sqlite, std::string path, uint64_t max_bytes,
        Merger merger);
  Status Exec(const char* sql) OUTPOST_REQUIRES(mu_);
  int64_t MetaInt(const char* key) OUTPOST_REQUIRES(mu_);
  Status SetMetaLocked(const std::string& key, const std::string& value) OUTPOST_REQUIRES(mu_);
  uint64_t BytesLocked() OUTPOST_REQUIRES(mu_);
  std::optional<SpoolRecord> OneLocked(bool newest) OUTPOST_REQUIRES(mu_);
  // Deletes one record and advances the acknowledged position.
  Status DeleteAckedLocked(int64_t seq) OUTPOST_REQUIRES(mu_);
  // The reserve file: give it back (true if there was one), take it again.
  bool ReleaseReserveLocked() OUTPOST_REQUIRES(mu_);
  void TakeReserveLocked() OUTPOST_REQUIRES(mu_);
  // Inserts with a fresh sequence number (in the caller's transaction).
  StatusOr<int64_t> InsertLocked(const std::string& kind, const std::string& boot_id,
                                 int64_t time_ms, const std::string& body, int64_t first_seq)
      OUTPOST_REQUIRES(mu_);
  // Folds summaries into buckets of `bucket_ms`; returns how many were folded.
  int64_t MergeLocked(int64_t bucket_ms) OUTPOST_REQUIRES(mu_);
  // Drops the oldest records until the bytes are under `target`, then writes
  // one gap record for them (and for records never written).
  Status DropOldestLocked(uint64_t target, const std::string& reason, const std::string& boot_id,
                          int64_t now_ms) OUTPOST_REQUIRES(mu_);
  Status MakeRoomLocked(size_t incoming, const std::string& boot_id, int64_t now_ms)
      OUTPOST_REQUIRES(mu_);

  std::mutex mu_;
  const std::unique_ptr<util::SqliteDb> sqlite_;
  sqlite3* const db_;  // sqlite_'s
  const std::string path_;
  const uint64_t max_bytes_;
  const Merger merger_;
  // Records that could not be written (disk full) since the last gap record.
  int64_t unrecorded_ OUTPOST_GUARDED_BY(mu_) = 0;
  int64_t unrecorded_total_ OUTPOST_GUARDED_BY(mu_) = 0;
  int64_t unrecorded_from_ms_ OUTPOST_GUARDED_BY(mu_) = 0;
  int64_t unrecorded_to_ms_ OUTPOST_GUARDED_BY(mu_) = 0;
  int64_t in_flight_ OUTPOST_GUARDED_BY(mu_) = 0;  // 0: none
  // Acknowledged, but the delete could not be written yet (disk full).
  std::set<int64_t> acked_unwritten_ OUTPOST_GUARDED_BY(mu_);
  bool reserve_held_ OUTPOST_GUARDED_BY(mu_) = false;
};

}  // namespace outpost::telemetry

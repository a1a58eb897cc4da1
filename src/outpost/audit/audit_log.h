// AuditLog — the tamper-evident record of what this box processed: one JSON
// line per request and per admin action, append-only, hash-chained, with
// signed checkpoints.
//
// A line is a JSON object with sorted keys: "seq" (1, 2, ...), "time" (UTC,
// ms), "type" ("request" | "admin" | "checkpoint"), the record's fields, "prev"
// (the previous line's hash; 64 zeros for seq 1) and "hash" =
// SHA-256(prev's 32 bytes ‖ the line without "hash"). Editing, deleting,
// inserting or reordering a line breaks the chain (audit_verify.h finds the
// first bad line). Prompt and response text are never written.
//
// Files: <dir>/audit-<first seq, 12 digits>.jsonl; a new file starts past
// `max_file_bytes`, its first line chained to the previous file's last.
// Every `checkpoint_every` records, or `checkpoint_interval` after the last
// record when newer ones exist, a checkpoint line is appended: "count" (the
// records before it), "head" (the hash of record `count`), "box", "key_id" and
// "sig" — Ed25519 over CheckpointMessage() with the key in
// <dir>/audit-ed25519.pem (created on first use; the public half beside it as
// .pub). The listener gets each checkpoint, so the uplink carries it to the
// centre: a box that deletes its tail or rewrites its whole log cannot match
// the checkpoints the centre already holds.
//
// Crash safety: a line is written with one write(); a torn last line (power
// cut mid-write) is cut off on the next Open. Checkpoints fdatasync.
// One writer per directory (an exclusive lock on <dir>/.lock).
//
// Thread-safety: Append from any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "outpost/audit/audit_crypto.h"
#include "outpost/util/clock.h"
#include "outpost/util/status.h"
#include "outpost/util/thread_annotations.h"

namespace outpost::audit {

struct AuditOptions {
  std::string dir;
  std::string box_id;
  int64_t checkpoint_every = 1000;         // records
  int64_t checkpoint_interval_ms = 60000;  // or this long after the last one
  uint64_t max_file_bytes = 64ull << 20;
};

struct Checkpoint {
  int64_t count = 0;  // records covered (the checkpoint line itself is count + 1)
  std::string head;   // hash of record `count`
  std::string box;
  std::string key_id;
  std::string sig;  // base64 Ed25519 over CheckpointMessage(box, count, head)
  int64_t time_ms = 0;
};

// "outpost-audit-checkpoint\n<box>\n<count>\n<head>\n": what a checkpoint signs.
std::string CheckpointMessage(const std::string& box, int64_t count, const std::string& head);

// "audit-000000000001.jsonl" for a file whose first record is `first_seq`.
std::string AuditFileName(int64_t first_seq);

class AuditLog {
 public:
  // Opens (or starts) the log in options.dir, creating the directory and the
  // key. Errors: InvalidArgument naming the directory (not writable, locked
  // by another process), Unavailable (the key).
  static StatusOr<std::unique_ptr<AuditLog>> Open(AuditOptions options, const util::Clock* clock);
  ~AuditLog();  // a last checkpoint, then closes

  // Appends one record of `type` with `fields` (strings, integers, booleans:
  // no floats, so the canonical form is exact). Write errors are logged and
  // counted, never thrown at the request.
  void Append(const std::string& type, nlohmann::json fields);

  void SetCheckpointListener(std::function<void(const Checkpoint&)> listener);
  // Writes a checkpoint now if records came since the last one.
  void CheckpointNow();

  int64_t head_seq();
  int64_t write_errors();
  const std::string& public_pem() const { return key_->public_pem(); }

 private:
  AuditLog(AuditOptions options, const util::Clock* clock, std::unique_ptr<SigningKey> key,
           int lock_fd);
  Status Recover();
  void WriteLocked(const std::string& type, nlohmann::json fields) OUTPOST_REQUIRES(mu_);
  void CheckpointLocked() OUTPOST_REQUIRES(mu_);

  const AuditOptions options_;
  const util::Clock* const clock_;
  const std::unique_ptr<SigningKey> key_;
  const int lock_fd_;

  std::mutex mu_;
  int fd_ OUTPOST_GUARDED_BY(mu_) = -1;
  uint64_t file_bytes_ OUTPOST_GUARDED_BY(mu_) = 0;
  int64_t seq_ OUTPOST_GUARDED_BY(mu_) = 0;
  std::string head_ OUTPOST_GUARDED_BY(mu_);
  int64_t since_checkpoint_ OUTPOST_GUARDED_BY(mu_) = 0;  // records since the last one
  int64_t write_errors_ OUTPOST_GUARDED_BY(mu_) = 0;
  std::function<void(const Checkpoint&)> listener_ OUTPOST_GUARDED_BY(mu_);

  std::mutex run_mu_;
  std::condition_variable run_cv_;
  bool stop_ = false;
  std::thread ticker_;
};

}  // namespace outpost::audit

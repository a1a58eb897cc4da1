// Sqlite — the small layer every SQLite-backed store shares: opening a
// database file for crash-safe use (WAL, synchronous=FULL, a busy timeout),
// running a statement, and a prepared statement that finalizes itself.
//
// A SqliteDb is not locked: the store that owns it serializes access (one
// mutex per store). A Stmt lives on the stack of one call.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "outpost/util/status.h"

namespace outpost::util {

class SqliteDb {
 public:
  // Opens (creating) the file: WAL keeps readers and the writer apart and
  // synchronous=FULL makes every commit durable before it returns.
  // `exclusive`: one process at a time — the database holds a lock on
  // `path`.lock while open. `schema`: statements run once open (CREATE …
  // IF NOT EXISTS). Errors: Unavailable naming `what` and the path (and,
  // when another process holds the lock, saying so).
  // `incremental_vacuum`: a new file is made with auto_vacuum=INCREMENTAL
  // (see IncrementalVacuum()); a file made without it (by an older version)
  // is rewritten once to take it (VACUUM: it needs free disk about the
  // file's size, and time in proportion; when that fails — a full disk —
  // the file keeps reusing its free pages and the next Open tries again).
  static StatusOr<std::unique_ptr<SqliteDb>> Open(const std::string& path, const std::string& what,
                                                  bool exclusive = false,
                                                  std::span<const char* const> schema = {},
                                                  bool incremental_vacuum = false);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  // One or more statements without results. ResourceExhausted on a full
  // disk, Internal otherwise, with SQLite's message.
  Status Exec(const std::string& sql);
  // Runs `body` (returning Status) in one write transaction (BEGIN
  // IMMEDIATE): committed when it returns OK, rolled back when it or the
  // commit fails — all of it or none. Returns the first error.
  template <typename F>
  Status InTransaction(F&& body) {
    if (Status st = Exec("BEGIN IMMEDIATE"); !st.ok()) return st;
    Status st = body();
    if (st.ok()) st = Exec("COMMIT");
    if (!st.ok()) (void)Exec("ROLLBACK");
    return st;
  }
  // Returns the file's free pages to the file system, after deletes of
  // bulk data — in a file opened with `incremental_vacuum`; elsewhere a
  // no-op (free pages are reused). Best effort. Not for the uplink spool, whose
  // full-disk handling relies on reusing free pages.
  void IncrementalVacuum();
  sqlite3* get() { return db_; }
  int64_t LastInsertRowId() { return sqlite3_last_insert_rowid(db_); }
  int Changes() { return sqlite3_changes(db_); }
  // PRAGMA auto_vacuum: 0 none, 1 full, 2 incremental; -1 on error.
  int AutoVacuumMode();

 private:
  SqliteDb(sqlite3* db, int lock_fd) : db_(db), lock_fd_(lock_fd) {}
  sqlite3* db_;
  int lock_fd_;  // -1: not exclusive
};

// A prepared statement, finalized on scope exit. Bind indexes start at 1,
// column indexes at 0.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &s_, nullptr); }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  bool ok() const { return rc_ == SQLITE_OK; }
  sqlite3_stmt* get() { return s_; }
  void Bind(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
  void Bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void BindBlob(int i, const std::string& v) {
    sqlite3_bind_blob(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  int Step() { return sqlite3_step(s_); }
  // Step() to completion of a statement without rows: OK, or Internal with
  // SQLite's message (ResourceExhausted on a full disk).
  Status Run();
  int64_t Int(int col) { return sqlite3_column_int64(s_, col); }
  std::string Text(int col) {
    const auto* p = static_cast<const char*>(sqlite3_column_blob(s_, col));
    return p == nullptr ? std::string() : std::string(p, sqlite3_column_bytes(s_, col));
  }

 private:
  sqlite3_stmt* s_ = nullptr;
  int rc_ = SQLITE_ERROR;
};

}  // namespace outpost::util

#include "outpost/util/sqlite.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace outpost::util {
namespace {

Status FromCode(sqlite3* db, int rc) {
  std::string msg = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  if (rc == SQLITE_FULL) return Status::ResourceExhausted(msg);
  return Status::Internal(msg);
}

}  // namespace

StatusOr<std::unique_ptr<SqliteDb>> SqliteDb::Open(const std::string& path, const std::string& what,
                                                   bool exclusive,
                                                   std::span<const char* const> schema,
                                                   bool incremental_vacuum) {
  int lock_fd = -1;
  if (exclusive) {
    lock_fd = open((path + ".lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    if (lock_fd < 0) return Status::Unavailable(what + " " + path + ": cannot write there");
    if (flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
      close(lock_fd);
      return Status::Unavailable(what + " " + path +
                                 ": another outpost process is using it (give each its own "
                                 "state_dir)");
    }
  }
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    std::string msg = db != nullptr ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    if (lock_fd >= 0) close(lock_fd);
    return Status::Unavailable(what + " " + path + ": " + msg);
  }
  sqlite3_busy_timeout(db, 5000);
  std::unique_ptr<SqliteDb> d(new SqliteDb(db, lock_fd));
  // Before WAL mode writes the file's first page: auto_vacuum is chosen then.
  if (incremental_vacuum) (void)d->Exec("PRAGMA auto_vacuum=INCREMENTAL");
  for (const char* sql : {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL"}) {
    if (Status st = d->Exec(sql); !st.ok()) {
      return Status::Unavailable(what + " " + path + ": " + st.message());
    }
  }
  for (const char* sql : schema) {
    if (Status st = d->Exec(sql); !st.ok()) {
      return Status::Unavailable(what + " " + path + ": " + st.message());
    }
  }
  // A file made before its store asked for incremental vacuum: the mode
  // changes only by rewriting the file. Best effort (a full disk leaves it
  // as it was, to be tried at the next Open).
  if (incremental_vacuum && d->AutoVacuumMode() == 0) (void)d->Exec("VACUUM");
  // The schema's and the mode's pages out of the WAL into the file: a new
  // store's WAL would otherwise keep ~60 KB until the 1000-page checkpoint,
  // on a disk that may be small. Best effort (another reader may hold it).
  (void)d->Exec("PRAGMA wal_checkpoint(TRUNCATE)");
  return d;
}

SqliteDb::~SqliteDb() {
  sqlite3_close(db_);
  if (lock_fd_ >= 0) close(lock_fd_);  // releases the lock
}

int SqliteDb::AutoVacuumMode() {
  Stmt q(db_, "PRAGMA auto_vacuum");
  if (!q.ok() || sqlite3_step(q.get()) != SQLITE_ROW) return -1;
  return sqlite3_column_int(q.get(), 0);
}

void SqliteDb::IncrementalVacuum() {
  (void)Exec("PRAGMA incremental_vacuum");
}

Status SqliteDb::Exec(const std::string& sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  if (rc == SQLITE_OK) return Status::Ok();
  std::string msg = err != nullptr ? err : sqlite3_errstr(rc);
  sqlite3_free(err);
  if (rc == SQLITE_FULL) return Status::ResourceExhausted(msg);
  return Status::Internal(msg);
}

Status Stmt::Run() {
  if (!ok()) return Status::Internal(sqlite3_errstr(rc_));
  for (;;) {
    const int rc = sqlite3_step(s_);
    if (rc == SQLITE_DONE) return Status::Ok();
    if (rc != SQLITE_ROW) return FromCode(sqlite3_db_handle(s_), rc);
  }
}

}  // namespace outpost::util

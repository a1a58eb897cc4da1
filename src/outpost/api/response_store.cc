#include "outpost/api/response_store.h"

#include "outpost/util/status_macros.h"

namespace outpost::api {
namespace {

using util::Stmt;

constexpr const char* kSchema[] = {
    "CREATE TABLE IF NOT EXISTS responses(id TEXT PRIMARY KEY, owner TEXT NOT NULL, created_at "
    "INTEGER NOT NULL, expires_at INTEGER NOT NULL, response TEXT NOT NULL, input_items TEXT NOT "
    "NULL, context TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS responses_by_expiry ON responses(expires_at)",
    // Items by id for item_reference; they live and die with their response.
    ("CREATE TABLE IF NOT EXISTS items(owner TEXT NOT NULL, id TEXT NOT NULL, response TEXT NOT "
     "NULL, seq INTEGER PRIMARY KEY AUTOINCREMENT, item TEXT NOT NULL)"),
    "CREATE INDEX IF NOT EXISTS items_by_id ON items(owner, id)",
    "CREATE INDEX IF NOT EXISTS items_by_response ON items(response)",
};

Status NoSuchResponse(const std::string& id, const std::string& param) {
  return Status::NotFound("no stored response with id '" + id +
                              "' (never stored, store: false, expired, deleted, or another key's)",
                          param);
}

// A record's columns, in the order RecordOf reads them.
constexpr const char* kRecordColumns =
    "id, owner, created_at, expires_at, response, input_items, context, request";

// The row a SELECT of kRecordColumns stands on (its items are not read).
StoredResponse RecordOf(Stmt& s) {
  StoredResponse r;
  r.id = s.Text(0);
  r.owner = s.Text(1);
  r.created_at = s.Int(2);
  r.expires_at = s.Int(3);
  r.response = s.Text(4);
  r.input_items = s.Text(5);
  r.context = s.Text(6);
  r.request = s.Text(7);
  return r;
}

}  // namespace

StatusOr<std::unique_ptr<ResponseStore>> ResponseStore::Open(const std::string& path) {
  // Incremental vacuum: what expires or is deleted goes back to the disk
  // (a file made before keeps its mode; its free pages are only reused).
  auto db = util::SqliteDb::Open(path, "response store", /*exclusive=*/true, kSchema,
                                 /*incremental_vacuum=*/true);
  if (!db.ok()) return db.status();
  // A store made before background runs were resumed lacks the column
  // ("duplicate column" on a current one is expected and ignored).
  (void)(*db)->Exec("ALTER TABLE responses ADD COLUMN request TEXT NOT NULL DEFAULT ''");
  // A run the last process left without its request cannot run again: failed.
  OUTPOST_RETURN_IF_ERROR((*db)->Exec(
      "UPDATE responses SET response = json_set(response, '$.status', 'failed', '$.error', "
      "json_object('code', 'server_error', 'message', 'the server stopped before the answer was "
      "whole')) WHERE json_extract(response, '$.status') IN ('queued', 'in_progress') AND "
      "request = ''"));
  return std::unique_ptr<ResponseStore>(new ResponseStore(std::move(db).value()));
}

Status ResponseStore::Put(const StoredResponse& r, int64_t now) {
  std::lock_guard<std::mutex> lock(mu_);
  bool purged = false;
  Status st = db_->InTransaction([&] { return PutLocked(r, now, &purged); });
  if (purged) db_->IncrementalVacuum();
  return st;
}

Status ResponseStore::PutLocked(const StoredResponse& r, int64_t now, bool* purged) {
  Stmt purge_items(db_->get(),
                   "DELETE FROM items WHERE response IN (SELECT id FROM responses WHERE "
                   "expires_at <= ?) OR response = ?");
  purge_items.Bind(1, now);
  purge_items.Bind(2, r.id);
  OUTPOST_RETURN_IF_ERROR(purge_items.Run());
  Stmt purge(db_->get(), "DELETE FROM responses WHERE expires_at <= ?");
  purge.Bind(1, now);
  OUTPOST_RETURN_IF_ERROR(purge.Run());
  *purged = db_->Changes() > 0;
  for (const auto& [item_id, item] : r.items) {
    Stmt i(db_->get(), "INSERT INTO items(owner, id, response, item) VALUES(?,?,?,?)");
    i.Bind(1, r.owner);
    i.Bind(2, item_id);
    i.Bind(3, r.id);
    i.Bind(4, item);
    OUTPOST_RETURN_IF_ERROR(i.Run());
  }
  Stmt s(db_->get(),
         "INSERT OR REPLACE INTO responses(id, owner, created_at, expires_at, response, "
         "input_items, context, request) VALUES(?,?,?,?,?,?,?,?)");
  s.Bind(1, r.id);
  s.Bind(2, r.owner);
  s.Bind(3, r.created_at);
  s.Bind(4, r.expires_at);
  s.Bind(5, r.response);
  s.Bind(6, r.input_items);
  s.Bind(7, r.context);
  s.Bind(8, r.request);
  return s.Run();
}

StatusOr<std::vector<StoredResponse>> ResponseStore::Unfinished(int64_t now) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string sql = std::string("SELECT ") + kRecordColumns +
                          " FROM responses WHERE json_extract(response, '$.status') IN "
                          "('queued', 'in_progress') AND request != '' AND expires_at > ? "
                          "ORDER BY created_at, rowid";
  Stmt s(db_->get(), sql.c_str());
  s.Bind(1, now);
  std::vector<StoredResponse> out;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) out.push_back(RecordOf(s));
  if (rc != SQLITE_DONE) return Status::Internal("response store: listing unfinished runs failed");
  return out;
}

StatusOr<StoredResponse> ResponseStore::Get(const std::string& owner, const std::string& id,
                                            int64_t now, const std::string& param) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string sql = std::string("SELECT ") + kRecordColumns +
                          " FROM responses WHERE id = ? AND owner = ? AND expires_at > ?";
  Stmt s(db_->get(), sql.c_str());
  s.Bind(1, id);
  s.Bind(2, owner);
  s.Bind(3, now);
  if (s.Step() != SQLITE_ROW) return NoSuchResponse(id, param);
  return RecordOf(s);
}

StatusOr<std::string> ResponseStore::Item(const std::string& owner, const std::string& item_id,
                                          int64_t now, const std::string& param) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_->get(),
         "SELECT items.item FROM items JOIN responses ON responses.id = items.response WHERE "
         "items.owner = ? AND items.id = ? AND responses.owner = ? AND responses.expires_at > ? "
         "ORDER BY items.seq DESC LIMIT 1");
  s.Bind(1, owner);
  s.Bind(2, item_id);
  s.Bind(3, owner);
  s.Bind(4, now);
  if (s.Step() != SQLITE_ROW) {
    return Status::NotFound("no stored item with id '" + item_id +
                                "' (items are kept with the stored responses that brought them: "
                                "never stored, store: false, expired, deleted, or another key's)",
                            param);
  }
  return s.Text(0);
}

Status ResponseStore::Delete(const std::string& owner, const std::string& id, int64_t now) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_->get(), "DELETE FROM responses WHERE id = ? AND owner = ? AND expires_at > ?");
  s.Bind(1, id);
  s.Bind(2, owner);
  s.Bind(3, now);
  OUTPOST_RETURN_IF_ERROR(s.Run());
  if (db_->Changes() == 0) return NoSuchResponse(id, "response_id");
  Stmt items(db_->get(), "DELETE FROM items WHERE response = ?");
  items.Bind(1, id);
  OUTPOST_RETURN_IF_ERROR(items.Run());
  db_->IncrementalVacuum();
  return Status::Ok();
}

int64_t ResponseStore::Count() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_->get(), "SELECT COUNT(*) FROM responses");
  return s.Step() == SQLITE_ROW ? s.Int(0) : 0;
}

}  // namespace outpost::api

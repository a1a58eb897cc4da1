#include "outpost/batch/batch_store.h"

#include <nlohmann/json.hpp>

namespace outpost::batch {
namespace {

using nlohmann::json;
using util::Stmt;

constexpr const char* kSchema[] = {
    "CREATE TABLE IF NOT EXISTS files(seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT "
    "NULL, owner TEXT NOT NULL, purpose TEXT NOT NULL, filename TEXT NOT NULL, bytes INTEGER NOT "
    "NULL, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, content BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS batches(seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT "
    "NULL, owner TEXT NOT NULL, endpoint TEXT NOT NULL, input_file_id TEXT NOT NULL, "
    "completion_window TEXT NOT NULL, status TEXT NOT NULL, created_at INTEGER NOT NULL, "
    "in_progress_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, finalizing_at INTEGER NOT "
    "NULL, completed_at INTEGER NOT NULL, failed_at INTEGER NOT NULL, expired_at INTEGER NOT NULL, "
    "cancelling_at INTEGER NOT NULL, cancelled_at INTEGER NOT NULL, output_file_id TEXT NOT NULL, "
    "error_file_id TEXT NOT NULL, metadata TEXT NOT NULL, errors TEXT NOT NULL, headers TEXT NOT "
    "NULL, total INTEGER NOT NULL, model TEXT NOT NULL DEFAULT '', output_expires_after INTEGER "
    "NOT NULL DEFAULT 0, totals TEXT NOT NULL DEFAULT '')",
    // state: 0 not yet run, 1 answered, 2 never run (expired).
    "CREATE TABLE IF NOT EXISTS lines(batch_id TEXT NOT NULL, idx INTEGER NOT NULL, custom_id "
    "TEXT NOT NULL, url TEXT NOT NULL, body TEXT NOT NULL, order_key TEXT NOT NULL, state INTEGER "
    "NOT NULL DEFAULT 0, status_code INTEGER NOT NULL DEFAULT 0, request_id TEXT NOT NULL DEFAULT "
    "'', response TEXT NOT NULL DEFAULT '', error_code TEXT NOT NULL DEFAULT '', error_message "
    "TEXT NOT NULL DEFAULT '', result_id TEXT NOT NULL DEFAULT '', input_tokens INTEGER NOT NULL "
    "DEFAULT 0, cached_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT "
    "0, reasoning_tokens INTEGER NOT NULL DEFAULT 0, PRIMARY KEY(batch_id, idx))",
    "CREATE INDEX IF NOT EXISTS lines_by_state ON lines(batch_id, state, order_key, idx)",
};

constexpr const char* kBatchColumns =
    "id, owner, endpoint, input_file_id, completion_window, status, created_at, in_progress_at, "
    "expires_at, finalizing_at, completed_at, failed_at, expired_at, cancelling_at, cancelled_at, "
    "output_file_id, error_file_id, metadata, errors, headers, total, model, output_expires_after, "
    "totals";

// Columns a store made before batches reported usage lacks ("duplicate
// column" on a current one is expected and ignored).
constexpr const char* kAddedColumns[] = {
    "ALTER TABLE batches ADD COLUMN model TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE batches ADD COLUMN output_expires_after INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE batches ADD COLUMN totals TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE lines ADD COLUMN input_tokens INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE lines ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE lines ADD COLUMN output_tokens INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE lines ADD COLUMN reasoning_tokens INTEGER NOT NULL DEFAULT 0",
};

BatchObject RowToBatch(Stmt& s) {
  BatchObject b;
  b.id = s.Text(0);
  b.owner = s.Text(1);
  b.endpoint = s.Text(2);
  b.input_file_id = s.Text(3);
  b.completion_window = s.Text(4);
  b.status = ParseBatchStatus(s.Text(5)).value_or(BatchStatus::kFailed);
  b.created_at = s.Int(6);
  b.in_progress_at = s.Int(7);
  b.expires_at = s.Int(8);
  b.finalizing_at = s.Int(9);
  b.completed_at = s.Int(10);
  b.failed_at = s.Int(11);
  b.expired_at = s.Int(12);
  b.cancelling_at = s.Int(13);
  b.cancelled_at = s.Int(14);
  b.output_file_id = s.Text(15);
  b.error_file_id = s.Text(16);
  b.metadata_json = s.Text(17);
  b.errors_json = s.Text(18);
  b.headers_json = s.Text(19);
  b.counts.total = s.Int(20);
  b.model = s.Text(21);
  b.output_expires_after = s.Int(22);
  return b;
}

// A finished batch's counts and usage, kept on its row when its lines go
// (Finalize): {"completed","failed","usage":[input, cached, output, reasoning]}.
std::string TotalsJson(const BatchObject& b) {
  return json{{"completed", b.counts.completed},
              {"failed", b.counts.failed},
              {"usage", {b.usage.input, b.usage.cached, b.usage.output, b.usage.reasoning}}}
      .dump();
}

bool ReadTotals(const std::string& text, BatchObject* b) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return false;
  const json u = j.value("usage", json::array());
  if (!u.is_array() || u.size() != 4) return false;
  for (const json& v : u) {
    if (!v.is_number_integer()) return false;
  }
  b->counts.completed = j.value("completed", int64_t{0});
  b->counts.failed = j.value("failed", int64_t{0});
  b->usage = {u[0].get<int64_t>(), u[1].get<int64_t>(), u[2].get<int64_t>(), u[3].get<int64_t>()};
  return true;
}

FileObject RowToFile(Stmt& s) {
  FileObject f;
  f.id = s.Text(0);
  f.owner = s.Text(1);
  f.purpose = s.Text(2);
  f.filename = s.Text(3);
  f.bytes = s.Int(4);
  f.created_at = s.Int(5);
  f.expires_at = s.Int(6);
  return f;
}

constexpr const char* kFileColumns = "id, owner, purpose, filename, bytes, created_at, expires_at";

// A body that is not JSON (it always is) is carried as a string.
json BodyJson(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? json(text) : j;
}

}  // namespace

const char* BatchStatusName(BatchStatus s) {
  switch (s) {
    case BatchStatus::kValidating:
      return "validating";
    case BatchStatus::kFailed:
      return "failed";
    case BatchStatus::kInProgress:
      return "in_progress";
    case BatchStatus::kFinalizing:
      return "finalizing";
    case BatchStatus::kCompleted:
      return "completed";
    case BatchStatus::kExpired:
      return "expired";
    case BatchStatus::kCancelling:
      return "cancelling";
    case BatchStatus::kCancelled:
      return "cancelled";
  }
  return "failed";
}

std::optional<BatchStatus> ParseBatchStatus(const std::string& s) {
  for (BatchStatus b : {BatchStatus::kValidating, BatchStatus::kFailed, BatchStatus::kInProgress,
                        BatchStatus::kFinalizing, BatchStatus::kCompleted, BatchStatus::kExpired,
                        BatchStatus::kCancelling, BatchStatus::kCancelled}) {
    if (s == BatchStatusName(b)) return b;
  }
  return std::nullopt;
}

bool IsTerminal(BatchStatus s) {
  return s == BatchStatus::kFailed || s == BatchStatus::kCompleted || s == BatchStatus::kExpired ||
         s == BatchStatus::kCancelled;
}

StatusOr<std::unique_ptr<BatchStore>> BatchStore::Open(const std::string& path) {
  // Deleted files and finished batches' lines give their pages back
  // (IncrementalVacuum).
  auto db = util::SqliteDb::Open(path, "batch store", /*exclusive=*/true, kSchema,
                                 /*incremental_vacuum=*/true);
  if (!db.ok()) return db.status();
  for (const char* sql : kAddedColumns) (void)(*db)->Exec(sql);
  return std::unique_ptr<BatchStore>(new BatchStore(std::move(db).value()));
}

BatchStore::~BatchStore() {
  std::lock_guard<std::mutex> lock(mu_);
  db_.reset();  // releases the file lock
}

// --- files -----------------------------------------------------------------

Status BatchStore::AddFile(const FileObject& f, const std::string& content) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_->get(),
         "INSERT INTO files(id, owner, purpose, filename, bytes, created_at, expires_at, content) "
         "VALUES(?,?,?,?,?,?,?,?)");
  s.Bind(1, f.id);
  s.Bind(2, f.owner);
  s.Bind(3, f.purpose);
  s.Bind(4, f.filename);
  s.Bind(5, static_cast<int64_t>(content.size()));
  s.Bind(6, f.created_at);
  s.Bind(7, f.expires_at);
  s.BindBlob(8, content);
  return s.Run();
}

StatusOr<FileObject> BatchStore::GetFile(const std::string& owner, const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(
      db_->get(),
      (std::string("SELECT ") + kFileColumns + " FROM files WHERE id = ? AND owner = ?").c_str());
  s.Bind(1, id);
  s.Bind(2, owner);
  if (s.Step() != SQLITE_ROW) return Status::NotFound("no file with id '" + id + "'", "file_id");
  return RowToFile(s);
}

StatusOr<std::string> BatchStore::FileContent(const std::string& owner, const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_->get(), "SELECT content FROM files WHERE id = ? AND owner = ?");
  s.Bind(1, id);
  s.Bind(2, owner);
  if (s.Step() != SQLITE_ROW) return Status::NotFound("no file with id '" + id + "'", "file_id");
  return s.Text(0);
}

std::vector<FileObject> BatchStore::ListFiles(const std::string& owner, const FileQuery& q,
                                              Page* page) {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t after_seq = q.ascending ? 0 : INT64_MAX;
  if (!q.after.empty()) {
    Stmt a(db_->get(), "SELECT seq FROM files WHERE id = ? AND owner = ?");
    a.Bind(1, q.after);
    a.Bind(2, owner);
    if (a.Step() == SQLITE_ROW) after_seq = a.Int(0);
  }
  const std::string sql = std::string("SELECT ") + kFileColumns +
                          " FROM files WHERE owner = ? AND (? = '' OR purpose = ?) AND " +
                          (q.ascending ? "seq > ? ORDER BY seq ASC" : "seq < ? ORDER BY seq DESC") +
                          " LIMIT ?";
  Stmt s(db_->get(), sql.c_str());
  s.Bind(1, owner);
  s.Bind(2, q.purpose);
  s.Bind(3, q.purpose);
  s.Bind(4, after_seq);
  s.Bind(5, q.limit + 1);
  std::vector<FileObject> out;
  while (s.Step() == SQLITE_ROW) out.push_back(RowToFile(s));
  page->has_more = static_cast<int64_t>(out.size()) > q.limit;
  if (page->has_more) out.pop_back();
  return out;
}

Status BatchStore::DeleteFile(const std::string& owner, const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_->get(), "DELETE FROM files WHERE id = ? AND owner = ?");
  s.Bind(1, id);
  s.Bind(2, owner);
  if (Status st = s.Run(); !st.ok()) return st;
  if (db_->Changes() == 0) return Status::NotFound("no file with id '" + id + "'", "file_id");
  db_->IncrementalVacuum();
  return Status::Ok();
}

int64_t BatchStore::DeleteExpiredFiles(int64_t now) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_->get(), "DELETE FROM files WHERE expires_at > 0 AND expires_at <= ?");
  s.Bind(1, now);
  if (!s.Run().ok()) return 0;
  const int64_t gone = db_->Changes();
  if (gone > 0) db_->IncrementalVacuum();
  return gone;
}

// --- batches ---------------------------------------------------------------

Status BatchStore::CreateBatch(const BatchObject& b, const std::vector<BatchLine>& lines) {
  std::lock_guard<std::mutex> lock(mu_);
  return db_->InTransaction([&]() -> Status {
    Stmt s(db_->get(), (std::string("INSERT INTO batches(") + kBatchColumns +
                        ") VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,'')")
                           .c_str());
    s.Bind(1, b.id);
    s.Bind(2, b.owner);
    s.Bind(3, b.endpoint);
    s.Bind(4, b.input_file_id);
    s.Bind(5, b.completion_window);
    s.Bind(6, std::string(BatchStatusName(b.status)));
    s.Bind(7, b.created_at);
    s.Bind(8, b.in_progress_at);
    s.Bind(9, b.expires_at);
    s.Bind(10, b.finalizing_at);
    s.Bind(11, b.completed_at);
    s.Bind(12, b.failed_at);
    s.Bind(13, b.expired_at);
    s.Bind(14, b.cancelling_at);
    s.Bind(15, b.cancelled_at);
    s.Bind(16, b.output_file_id);
    s.Bind(17, b.error_file_id);
    s.Bind(18, b.metadata_json);
    s.Bind(19, b.errors_json);
    s.Bind(20, b.headers_json);
    s.Bind(21, static_cast<int64_t>(lines.size()));
    s.Bind(22, b.model);
    s.Bind(23, b.output_expires_after);
    if (Status r = s.Run(); !r.ok()) return r;
    Stmt l(db_->get(),
           "INSERT INTO lines(batch_id, idx, custom_id, url, body, order_key) VALUES(?,?,?,?,?,?)");
    for (const BatchLine& line : lines) {
      sqlite3_reset(l.get());
      l.Bind(1, b.id);
      l.Bind(2, line.index);
      l.Bind(3, line.custom_id);
      l.Bind(4, line.url);
      l.Bind(5, line.body);
      l.Bind(6, line.order_key);
      if (Status r = l.Run(); !r.ok()) return r;
    }
    return Status::Ok();
  });
}

void BatchStore::CountLinesLocked(BatchObject* b) {
  Stmt s(db_->get(),
         "SELECT COALESCE(SUM(state = 1 AND status_code = 200), 0), COALESCE(SUM(state = 2 OR "
         "(state = 1 AND status_code <> 200)), 0), COALESCE(SUM(input_tokens), 0), "
         "COALESCE(SUM(cached_tokens), 0), COALESCE(SUM(output_tokens), 0), "
         "COALESCE(SUM(reasoning_tokens), 0) FROM lines WHERE batch_id = ?");
  s.Bind(1, b->id);
  if (s.Step() == SQLITE_ROW) {
    b->counts.completed = s.Int(0);
    b->counts.failed = s.Int(1);
    b->usage = {s.Int(2), s.Int(3), s.Int(4), s.Int(5)};
  }
}

StatusOr<BatchObject> BatchStore::GetBatch(const std::string& owner, const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_->get(),
         (std::string("SELECT ") + kBatchColumns + " FROM batches WHERE id = ? AND owner = ?")
             .c_str());
  s.Bind(1, id);
  s.Bind(2, owner);
  if (s.Step() != SQLITE_ROW) return Status::NotFound("no batch with id '" + id + "'", "batch_id");
  BatchObject b = RowToBatch(s);
  if (!ReadTotals(s.Text(23), &b)) CountLinesLocked(&b);
  return b;
}

std::vector<BatchObject> BatchStore::ListBatches(const std::string& owner, const std::string& after,
                                                 int64_t limit, Page* page) {
  std::vector<std::string> ids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    int64_t after_seq = INT64_MAX;
    if (!after.empty()) {
      Stmt a(db_->get(), "SELECT seq FROM batches WHERE id = ? AND owner = ?");
      a.Bind(1, after);
      a.Bind(2, owner);
      if (a.Step() == SQLITE_ROW) after_seq = a.Int(0);
    }
    Stmt s(db_->get(),
           "SELECT id FROM batches WHERE owner = ? AND seq < ? ORDER BY seq DESC LIMIT ?");
    s.Bind(1, owner);
    s.Bind(2, after_seq);
    s.Bind(3, limit + 1);
    while (s.Step() == SQLITE_ROW) ids.push_back(s.Text(0));
  }
  page->has_more = static_cast<int64_t>(ids.size()) > limit;
  if (page->has_more) ids.pop_back();
  std::vector<BatchObject> out;
  for (const auto& id : ids) {
    auto b = GetBatch(owner, id);
    if (b.ok()) out.push_back(std::move(b).value());
  }
  return out;
}

std::vector<BatchObject> BatchStore::Unfinished() {
  std::vector<std::pair<std::string, std::string>> ids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Stmt s(db_->get(),
           "SELECT id, owner FROM batches WHERE status IN ('in_progress', 'finalizing', "
           "'cancelling') ORDER BY seq ASC");
    while (s.Step() == SQLITE_ROW) ids.emplace_back(s.Text(0), s.Text(1));
  }
  std::vector<BatchObject> out;
  for (const auto& [id, owner] : ids) {
    auto b = GetBatch(owner, id);
    if (b.ok()) out.push_back(std::move(b).value());
  }
  return out;
}

StatusOr<BatchObject> BatchStore::Cancel(const std::string& owner, const std::string& id,
                                         int64_t now) {
  auto b = GetBatch(owner, id);
  if (!b.ok()) return b.status();
  if (b->status != BatchStatus::kInProgress && b->status != BatchStatus::kValidating) {
    if (b->status == BatchStatus::kCancelling || b->status == BatchStatus::kCancelled) return b;
    return Status::InvalidArgument(std::string("batch '") + id + "' is " +
                                       BatchStatusName(b->status) +
                                       " and can no longer be "
                                       "cancelled",
                                   "batch_id");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    Stmt s(db_->get(),
           "UPDATE batches SET status = 'cancelling', cancelling_at = ? WHERE id = ? AND status = "
           "'in_progress'");
    s.Bind(1, now);
    s.Bind(2, id);
    if (Status st = s.Run(); !st.ok()) return st;
  }
  return GetBatch(owner, id);
}

Status BatchStore::MarkFinalizing(const std::string& id, int64_t now) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_->get(),
         "UPDATE batches SET status = 'finalizing', finalizing_at = ? WHERE id = ? AND status = "
         "'in_progress'");
  s.Bind(1, now);
  s.Bind(2, id);
  return s.Run();
}

// --- lines -----------------------------------------------------------------

std::vector<BatchLine> BatchStore::PendingLines(const std::string& batch_id, int64_t limit,
                                                const std::set<int64_t>& skip) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_->get(),
         "SELECT idx, custom_id, url, body, order_key FROM lines WHERE batch_id = ? AND state = 0 "
         "ORDER BY order_key, idx");
  s.Bind(1, batch_id);
  std::vector<BatchLine> out;
  while (static_cast<int64_t>(out.size()) < limit && s.Step() == SQLITE_ROW) {
    const int64_t idx = s.Int(0);
    if (skip.count(idx) != 0) continue;
    out.push_back({idx, s.Text(1), s.Text(2), s.Text(3), s.Text(4)});
  }
  return out;
}

Status BatchStore::RecordLine(const std::string& batch_id, int64_t index, const LineResult& r,
                              const std::string& result_id) {
  std::lock_guard<std::mutex> lock(mu_);
  return db_->InTransaction([&]() -> Status {
    Stmt s(db_->get(),
           "UPDATE lines SET state = 1, status_code = ?, request_id = ?, response = ?, error_code "
           "= ?, error_message = ?, result_id = ?, input_tokens = ?, cached_tokens = ?, "
           "output_tokens = ?, reasoning_tokens = ? WHERE batch_id = ? AND idx = ? AND state = 0");
    s.Bind(1, static_cast<int64_t>(r.status_code));
    s.Bind(2, r.request_id);
    s.Bind(3, r.body);
    s.Bind(4, r.error_code);
    s.Bind(5, r.error_message);
    s.Bind(6, result_id);
    s.Bind(7, r.usage.input);
    s.Bind(8, r.usage.cached);
    s.Bind(9, r.usage.output);
    s.Bind(10, r.usage.reasoning);
    s.Bind(11, batch_id);
    s.Bind(12, index);
    if (Status u = s.Run(); !u.ok()) return u;
    if (r.model.empty() || r.status_code != 200) return Status::Ok();
    // Lines that name no model are served by the default one: the first
    // answer says which.
    Stmt m(db_->get(), "UPDATE batches SET model = ? WHERE id = ? AND model = ''");
    m.Bind(1, r.model);
    m.Bind(2, batch_id);
    return m.Run();
  });
}

std::string BatchStore::OutputLinesLocked(const std::string& batch_id, bool ok) {
  Stmt s(db_->get(),
         "SELECT custom_id, state, status_code, request_id, response, error_code, error_message, "
         "result_id FROM lines WHERE batch_id = ? AND state <> 0 AND ((state = 1 AND status_code "
         "= 200) = ?) ORDER BY idx");
  s.Bind(1, batch_id);
  s.Bind(2, static_cast<int64_t>(ok ? 1 : 0));
  std::string out;
  while (s.Step() == SQLITE_ROW) {
    json line = {{"id", s.Text(7)}, {"custom_id", s.Text(0)}};
    if (s.Int(1) == 1 && s.Int(2) > 0) {
      line["response"] = {
          {"status_code", s.Int(2)}, {"request_id", s.Text(3)}, {"body", BodyJson(s.Text(4))}};
      line["error"] = nullptr;
    } else {
      line["response"] = nullptr;
      line["error"] = {{"code", s.Text(5)}, {"message", s.Text(6)}};
    }
    out += line.dump();
    out += '\n';
  }
  return out;
}

Status BatchStore::Finalize(const std::string& batch_id, const Final& f) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string owner;
  int64_t expires_after = 0;
  {
    Stmt o(db_->get(), "SELECT owner, output_expires_after FROM batches WHERE id = ?");
    o.Bind(1, batch_id);
    if (o.Step() != SQLITE_ROW) return Status::NotFound("no batch with id '" + batch_id + "'");
    owner = o.Text(0);
    expires_after = o.Int(1);
  }
  const Status st = db_->InTransaction([&]() -> Status {
    if (!f.unrun_code.empty()) {
      Stmt u(db_->get(),
             "UPDATE lines SET state = 2, error_code = ?, error_message = ?, result_id = ? || idx "
             "WHERE batch_id = ? AND state = 0");
      u.Bind(1, f.unrun_code);
      u.Bind(2, f.unrun_message);
      u.Bind(3, f.unrun_result_prefix);
      u.Bind(4, batch_id);
      if (Status r = u.Run(); !r.ok()) return r;
    }
    std::string ids[2];
    for (int ok = 1; ok >= 0; --ok) {
      const std::string content = OutputLinesLocked(batch_id, ok == 1);
      if (content.empty()) continue;
      const std::string& id = ok == 1 ? f.output_file_id : f.error_file_id;
      Stmt a(db_->get(),
             "INSERT INTO files(id, owner, purpose, filename, bytes, created_at, expires_at, "
             "content) VALUES(?,?,'batch_output',?,?,?,?,?)");
      a.Bind(1, id);
      a.Bind(2, owner);
      a.Bind(3, batch_id + (ok == 1 ? "_output.jsonl" : "_error.jsonl"));
      a.Bind(4, static_cast<int64_t>(content.size()));
      a.Bind(5, f.at);
      a.Bind(6, expires_after > 0 ? f.at + expires_after : int64_t{0});
      a.BindBlob(7, content);
      if (Status r = a.Run(); !r.ok()) return r;
      ids[ok] = id;
    }
    const char* stamp = f.status == BatchStatus::kCompleted   ? "completed_at"
                        : f.status == BatchStatus::kExpired   ? "expired_at"
                        : f.status == BatchStatus::kCancelled ? "cancelled_at"
                                                              : "failed_at";
    Stmt b(db_->get(), (std::string("UPDATE batches SET status = ?, ") + stamp +
                        " = ?, output_file_id = ?, error_file_id = ? WHERE id = ?")
                           .c_str());
    b.Bind(1, std::string(BatchStatusName(f.status)));
    b.Bind(2, f.at);
    b.Bind(3, ids[1]);
    b.Bind(4, ids[0]);
    b.Bind(5, batch_id);
    if (Status r = b.Run(); !r.ok()) return r;
    // The lines' answers are in the files now: keep only their totals, so a
    // batch's results are on disk once, not twice.
    BatchObject totals;
    totals.id = batch_id;
    CountLinesLocked(&totals);
    Stmt t(db_->get(), "UPDATE batches SET totals = ? WHERE id = ?");
    t.Bind(1, TotalsJson(totals));
    t.Bind(2, batch_id);
    if (Status r = t.Run(); !r.ok()) return r;
    Stmt d(db_->get(), "DELETE FROM lines WHERE batch_id = ?");
    d.Bind(1, batch_id);
    return d.Run();
  });
  if (st.ok()) db_->IncrementalVacuum();  // the lines' pages
  return st;
}

}  // namespace outpost::batch

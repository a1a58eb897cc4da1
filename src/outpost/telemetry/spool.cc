#include "outpost/telemetry/spool.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "outpost/util/sqlite.h"
#include "outpost/util/status_macros.h"

namespace outpost::telemetry {
namespace {

constexpr int64_t kHourMs = 3'600'000;
constexpr int64_t kDayMs = 24 * kHourMs;
constexpr off_t kReserveBytes = 128 << 10;

using util::Stmt;

SpoolRecord RowToRecord(Stmt& st) {
  SpoolRecord r;
  r.seq = st.Int(0);
  r.first_seq = st.Int(1);
  r.kind = st.Text(2);
  r.boot_id = st.Text(3);
  r.time_ms = st.Int(4);
  r.body = st.Text(5);
  return r;
}

}  // namespace

StatusOr<std::unique_ptr<Spool>> Spool::Open(const std::string& path, uint64_t max_bytes,
                                             Merger merger) {
  // WAL keeps readers and the writer apart; FULL makes every commit durable,
  // so an acknowledged position or a sequence number is never handed out twice.
  static constexpr const char* kSchema[] = {
      "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)",
      "CREATE TABLE IF NOT EXISTS records(seq INTEGER PRIMARY KEY, first_seq INTEGER NOT "
      "NULL, kind TEXT NOT NULL, boot_id TEXT NOT NULL, time_ms INTEGER NOT NULL, body TEXT "
      "NOT NULL)"};
  auto opened = util::SqliteDb::Open(path, "uplink spool", /*exclusive=*/false, kSchema);
  if (!opened.ok()) return opened.status();
  std::unique_ptr<Spool> spool(
      new Spool(std::move(opened).value(), path, max_bytes, std::move(merger)));
  sqlite3* const db = spool->db_;
  std::lock_guard<std::mutex> lock(spool->mu_);
  // The file may grow to about twice the records' bound (free pages, the
  // index, a merge in progress) and no further.
  Stmt ps(db, "PRAGMA page_size");
  int64_t page = 4096;
  if (ps.ok() && ps.Step() == SQLITE_ROW) page = std::max<int64_t>(512, ps.Int(0));
  const int64_t pages = static_cast<int64_t>((2 * max_bytes + (1u << 20)) / page);
  spool->Exec(("PRAGMA max_page_count=" + std::to_string(pages)).c_str());
  spool->TakeReserveLocked();
  return spool;
}

Spool::Spool(std::unique_ptr<util::SqliteDb> sqlite, std::string path, uint64_t max_bytes,
             Merger merger)
    : sqlite_(std::move(sqlite)),
      db_(sqlite_->get()),
      path_(std::move(path)),
      max_bytes_(max_bytes),
      merger_(std::move(merger)) {}

Spool::~Spool() = default;

Status Spool::Exec(const char* sql) {
  return sqlite_->Exec(sql);
}

int64_t Spool::MetaInt(const char* key) {
  Stmt st(db_, "SELECT value FROM meta WHERE key = ?");
  st.Bind(1, std::string(key));
  if (st.Step() != SQLITE_ROW) return 0;
  return st.Int(0);
}

Status Spool::SetMetaLocked(const std::string& key, const std::string& value) {
  Stmt st(db_,
          "INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = "
          "excluded.value");
  st.Bind(1, key);
  st.Bind(2, value);
  const int rc = st.Step();
  if (rc == SQLITE_DONE) return Status::Ok();
  if (rc == SQLITE_FULL) return Status::ResourceExhausted("disk full");
  return Status::Internal(sqlite3_errmsg(db_));
}

std::string Spool::Meta(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt st(db_, "SELECT value FROM meta WHERE key = ?");
  st.Bind(1, key);
  return st.Step() == SQLITE_ROW ? st.Text(0) : std::string();
}

Status Spool::SetMeta(const std::string& key, const std::string& value) {
  std::lock_guard<std::mutex> lock(mu_);
  return SetMetaLocked(key, value);
}

uint64_t Spool::BytesLocked() {
  Stmt st(db_, "SELECT COALESCE(SUM(length(CAST(body AS BLOB))), 0) FROM records");
  return st.Step() == SQLITE_ROW ? static_cast<uint64_t>(st.Int(0)) : 0;
}

StatusOr<int64_t> Spool::InsertLocked(const std::string& kind, const std::string& boot_id,
                                      int64_t time_ms, const std::string& body, int64_t first_seq) {
  const int64_t seq = std::max<int64_t>(1, MetaInt("next_seq"));
  Stmt st(db_,
          "INSERT INTO records(seq, first_seq, kind, boot_id, time_ms, body) VALUES(?, ?, "
          "?, ?, ?, ?)");
  st.Bind(1, seq);
  st.Bind(2, first_seq > 0 ? first_seq : seq);
  st.Bind(3, kind);
  st.Bind(4, boot_id);
  st.Bind(5, time_ms);
  st.Bind(6, body);
  const int rc = st.Step();
  if (rc == SQLITE_FULL) return Status::ResourceExhausted("disk full");
  if (rc != SQLITE_DONE) return Status::Internal(sqlite3_errmsg(db_));
  OUTPOST_RETURN_IF_ERROR(SetMetaLocked("next_seq", std::to_string(seq + 1)));
  return seq;
}

int64_t Spool::MergeLocked(int64_t bucket_ms) {
  // Summaries oldest first; a run of the same boot and bucket folds into its
  // last member. The record in flight is neither folded nor folded into.
  std::vector<SpoolRecord> rows;
  {
    Stmt st(db_,
            "SELECT seq, first_seq, kind, boot_id, time_ms, body FROM records WHERE kind = "
            "'summary' ORDER BY seq");
    while (st.Step() == SQLITE_ROW) rows.push_back(RowToRecord(st));
  }
  int64_t folded = 0;
  size_t i = 0;
  while (i < rows.size()) {
    size_t j = i + 1;
    if (rows[i].seq != in_flight_) {
      while (j < rows.size() && rows[j].seq != in_flight_ && rows[j].boot_id == rows[i].boot_id &&
             rows[j].time_ms / bucket_ms == rows[i].time_ms / bucket_ms) {
        ++j;
      }
    }
    if (j - i > 1) {
      std::string acc = rows[i].body;
      for (size_t k = i + 1; k < j; ++k) acc = merger_(acc, rows[k].body);
      Stmt up(db_, "UPDATE records SET body = ?, first_seq = ? WHERE seq = ?");
      up.Bind(1, acc);
      up.Bind(2, rows[i].first_seq);
      up.Bind(3, rows[j - 1].seq);
      if (up.Step() != SQLITE_DONE) return folded;
      Stmt del(db_, "DELETE FROM records WHERE kind = 'summary' AND seq >= ? AND seq < ?");
      del.Bind(1, rows[i].seq);
      del.Bind(2, rows[j - 1].seq);
      if (del.Step() != SQLITE_DONE) return folded;
      folded += static_cast<int64_t>(j - i - 1);
    }
    i = j;
  }
  if (folded > 0) {
    SetMetaLocked("merged_records", std::to_string(MetaInt("merged_records") + folded));
  }
  return folded;
}

Status Spool::DropOldestLocked(uint64_t target, const std::string& reason,
                               const std::string& boot_id, int64_t now_ms) {
  uint64_t bytes = BytesLocked();
  int64_t from_seq = 0, to_seq = 0, from_ms = 0, to_ms = 0, n = 0;
  std::map<std::string, int64_t> kinds;
  int64_t earlier_unrecorded = 0;
  std::vector<int64_t> doomed;
  {
    Stmt st(db_, "SELECT seq, first_seq, kind, boot_id, time_ms, body FROM records ORDER BY seq");
    while (bytes > target && st.Step() == SQLITE_ROW) {
      SpoolRecord r = RowToRecord(st);
      if (r.seq == in_flight_ || acked_unwritten_.count(r.seq) != 0) continue;
      int64_t lo = r.first_seq;
      if (r.kind == "gap") {
        // A gap dropped in turn: the new gap covers its range too.
        const auto g = nlohmann::json::parse(r.body, nullptr, false);
        if (g.is_object()) {
          lo = std::min(lo, g.value("from_seq", lo));
          earlier_unrecorded += g.value("unrecorded", int64_t{0});
          kinds["summary"] += g.value(nlohmann::json::json_pointer("/kinds/summary"), int64_t{0});
          kinds["event"] += g.value(nlohmann::json::json_pointer("/kinds/event"), int64_t{0});
          n += g.value("records", int64_t{0});
          if (g.contains("from_ms")) r.time_ms = std::min(r.time_ms, g.value("from_ms", r.time_ms));
        }
      } else {
        ++kinds[r.kind];
        ++n;
      }
      from_seq = from_seq == 0 ? lo : std::min(from_seq, lo);
      to_seq = std::max(to_seq, r.seq);
      from_ms = from_ms == 0 ? r.time_ms : std::min(from_ms, r.time_ms);
      to_ms = std::max(to_ms, r.time_ms);
      bytes -= std::min<uint64_t>(bytes, r.body.size());
      doomed.push_back(r.seq);
    }
  }
  if (doomed.empty() && unrecorded_ == 0) return Status::Ok();
  for (int64_t seq : doomed) {
    Stmt del(db_, "DELETE FROM records WHERE seq = ?");
    del.Bind(1, seq);
    if (del.Step() != SQLITE_DONE) return Status::ResourceExhausted(sqlite3_errmsg(db_));
  }
  nlohmann::json gap = {{"reason", reason}, {"records", n}, {"kinds", kinds}};
  if (!doomed.empty()) {
    gap["from_seq"] = from_seq;
    gap["to_seq"] = to_seq;
    gap["from_ms"] = from_ms;
    gap["to_ms"] = to_ms;
  }
  const int64_t unrecorded = unrecorded_ + earlier_unrecorded;
  if (unrecorded > 0) {
    gap["unrecorded"] = unrecorded;
    if (unrecorded_ > 0) {
      gap["unrecorded_from_ms"] = unrecorded_from_ms_;
      gap["unrecorded_to_ms"] = unrecorded_to_ms_;
    }
  }
  auto seq = InsertLocked("gap", boot_id, now_ms, gap.dump(), 0);
  if (!seq.ok()) return seq.status();
  unrecorded_ = 0;
  SetMetaLocked("dropped_records",
                std::to_string(MetaInt("dropped_records") + static_cast<int64_t>(doomed.size())));
  SetMetaLocked("gap_records", std::to_string(MetaInt("gap_records") + 1));
  return Status::Ok();
}

Status Spool::MakeRoomLocked(size_t incoming, const std::string& boot_id, int64_t now_ms) {
  const uint64_t high = max_bytes_ / 10 * 8;
  if (BytesLocked() + incoming > high) {
    MergeLocked(kHourMs);
    if (BytesLocked() + incoming > high) MergeLocked(kDayMs);
  }
  if (BytesLocked() + incoming > max_bytes_) {
    const uint64_t target = max_bytes_ / 10 * 9;
    return DropOldestLocked(target > incoming ? target - incoming : 0, "spool_full", boot_id,
                            now_ms);
  }
  if (unrecorded_ > 0) return DropOldestLocked(UINT64_MAX, "disk_full", boot_id, now_ms);
  return Status::Ok();
}

StatusOr<int64_t> Spool::Append(const std::string& kind, const std::string& boot_id,
                                int64_t time_ms, const std::string& body) {
  std::lock_guard<std::mutex> lock(mu_);
  if (body.size() > max_bytes_ / 2) {
    return Status::InvalidArgument("uplink record of " + std::to_string(body.size()) +
                                   " bytes is over half the spool's bound");
  }
  if (!reserve_held_) {
    Exec("PRAGMA wal_checkpoint(TRUNCATE)");
    TakeReserveLocked();
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    Status st = Exec("BEGIN IMMEDIATE");
    if (st.ok()) st = MakeRoomLocked(body.size(), boot_id, time_ms);
    StatusOr<int64_t> seq =
        st.ok() ? InsertLocked(kind, boot_id, time_ms, body, 0) : StatusOr<int64_t>(st);
    if (seq.ok()) st = Exec("COMMIT");
    if (seq.ok() && st.ok()) return seq;
    Exec("ROLLBACK");
    const Status why = !seq.ok() ? seq.status() : st;
    if (why.code() != StatusCode::kResourceExhausted) {
      // Not a full disk (a damaged file, an I/O error): drop nothing.
      return Status::Unavailable("uplink spool " + path_ + ": " + why.message());
    }
    if (attempt == 0) {
      // The disk (or the file's page cap) is full: give the reserve back so
      // that deletes can be written, drop half the records, try once more.
      ReleaseReserveLocked();
      Exec("BEGIN IMMEDIATE");
      if (DropOldestLocked(BytesLocked() / 2, "disk_full", boot_id, time_ms).ok() &&
          Exec("COMMIT").ok()) {
        continue;
      }
      Exec("ROLLBACK");
    }
  }
  if (unrecorded_ == 0) unrecorded_from_ms_ = time_ms;
  unrecorded_to_ms_ = time_ms;
  ++unrecorded_;
  ++unrecorded_total_;
  return Status::ResourceExhausted("uplink spool " + path_ +
                                   ": the disk is full; the record is counted in the next gap");
}

std::optional<SpoolRecord> Spool::OneLocked(bool newest) {
  Stmt st(db_, newest ? "SELECT seq, first_seq, kind, boot_id, time_ms, body FROM records ORDER "
                        "BY seq DESC"
                      : "SELECT seq, first_seq, kind, boot_id, time_ms, body FROM records ORDER "
                        "BY seq");
  while (st.Step() == SQLITE_ROW) {
    if (acked_unwritten_.count(st.Int(0)) == 0) return RowToRecord(st);
  }
  return std::nullopt;
}

bool Spool::ReleaseReserveLocked() {
  if (!reserve_held_) return false;
  reserve_held_ = false;
  return unlink((path_ + ".reserve").c_str()) == 0;
}

void Spool::TakeReserveLocked() {
  if (reserve_held_) return;
  const std::string p = path_ + ".reserve";
  const int fd = open(p.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0) return;
  const bool ok = posix_fallocate(fd, 0, kReserveBytes) == 0;
  close(fd);
  if (ok) {
    reserve_held_ = true;
  } else {
    unlink(p.c_str());
  }
}

Status Spool::DeleteAckedLocked(int64_t seq) {
  OUTPOST_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
  Stmt del(db_, "DELETE FROM records WHERE seq = ?");
  del.Bind(1, seq);
  Status st = Status::Ok();
  const int rc = del.Step();
  if (rc == SQLITE_FULL) st = Status::ResourceExhausted("disk full");
  if (rc != SQLITE_DONE && st.ok()) st = Status::Internal(sqlite3_errmsg(db_));
  if (st.ok() && sqlite3_changes(db_) > 0) {
    st = SetMetaLocked("acked_records", std::to_string(MetaInt("acked_records") + 1));
    if (st.ok() && seq > MetaInt("acked_seq_max")) {
      st = SetMetaLocked("acked_seq_max", std::to_string(seq));
    }
  }
  if (st.ok()) st = Exec("COMMIT");
  if (!st.ok()) Exec("ROLLBACK");
  return st;
}

std::optional<SpoolRecord> Spool::Take(bool newest) {
  std::lock_guard<std::mutex> lock(mu_);
  auto r = OneLocked(newest);
  if (r) in_flight_ = r->seq;
  return r;
}

void Spool::Release(int64_t seq) {
  std::lock_guard<std::mutex> lock(mu_);
  if (in_flight_ == seq) in_flight_ = 0;
}

Status Spool::Ack(int64_t seq) {
  std::lock_guard<std::mutex> lock(mu_);
  if (in_flight_ == seq) in_flight_ = 0;
  acked_unwritten_.insert(seq);
  // Earlier acknowledgements the disk refused go first.
  for (auto it = acked_unwritten_.begin(); it != acked_unwritten_.end();) {
    Status st = DeleteAckedLocked(*it);
    if (!st.ok() && st.code() == StatusCode::kResourceExhausted && ReleaseReserveLocked()) {
      st = DeleteAckedLocked(*it);
    }
    if (!st.ok()) {
      // Kept in memory: not sent again by this process; written later.
      return st.code() == StatusCode::kResourceExhausted ? Status::Ok() : st;
    }
    it = acked_unwritten_.erase(it);
  }
  if (!reserve_held_) {
    Exec("PRAGMA wal_checkpoint(TRUNCATE)");
    TakeReserveLocked();
  }
  return Status::Ok();
}

Status Spool::Reject(int64_t seq, const std::string& reason, const std::string& boot_id,
                     int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  if (in_flight_ == seq) in_flight_ = 0;
  Stmt get(db_, "SELECT seq, first_seq, kind, boot_id, time_ms, body FROM records WHERE seq = ?");
  get.Bind(1, seq);
  if (get.Step() != SQLITE_ROW) return Status::Ok();
  const SpoolRecord r = RowToRecord(get);
  OUTPOST_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
  Stmt del(db_, "DELETE FROM records WHERE seq = ?");
  del.Bind(1, seq);
  Status st = del.Step() == SQLITE_DONE ? Status::Ok() : Status::Internal(sqlite3_errmsg(db_));
  if (st.ok() && r.kind != "gap") {
    const nlohmann::json gap = {{"reason", reason},       {"records", 1},
                                {"kinds", {{r.kind, 1}}}, {"from_seq", r.first_seq},
                                {"to_seq", r.seq},        {"from_ms", r.time_ms},
                                {"to_ms", r.time_ms}};
    auto ins = InsertLocked("gap", boot_id, now_ms, gap.dump(), 0);
    st = ins.status();
    if (st.ok()) st = SetMetaLocked("gap_records", std::to_string(MetaInt("gap_records") + 1));
  }
  if (st.ok()) st = Exec("COMMIT");
  if (!st.ok()) Exec("ROLLBACK");
  return st;
}

SpoolStats Spool::Stats() {
  std::lock_guard<std::mutex> lock(mu_);
  SpoolStats s;
  {
    Stmt st(db_, "SELECT COUNT(*) FROM records");
    if (st.Step() == SQLITE_ROW) s.records = st.Int(0);
  }
  s.records -= static_cast<int64_t>(acked_unwritten_.size());
  {
    Stmt st(db_, "SELECT COALESCE(MAX(seq), 0) FROM records");
    if (st.Step() == SQLITE_ROW) s.newest_seq = st.Int(0);
  }
  s.bytes = BytesLocked();
  s.max_bytes = max_bytes_;
  s.next_seq = std::max<int64_t>(1, MetaInt("next_seq"));
  s.acked_records = MetaInt("acked_records");
  s.acked_seq_max = MetaInt("acked_seq_max");
  s.dropped_records = MetaInt("dropped_records");
  s.gap_records = MetaInt("gap_records");
  s.merged_records = MetaInt("merged_records");
  s.unrecorded = unrecorded_total_;
  return s;
}

}  // namespace outpost::telemetry

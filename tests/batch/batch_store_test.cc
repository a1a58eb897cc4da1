#include "outpost/batch/batch_store.h"

#include <gtest/gtest.h>

#include <map>

#include <sqlite3.h>
#include <nlohmann/json.hpp>

#include "mocks/temp_file.h"

namespace outpost::batch {
namespace {

using nlohmann::json;

std::string NewDbPath() {
  return testing::TempPath(".db");
}

std::unique_ptr<BatchStore> OpenStore(const std::string& path) {
  auto s = BatchStore::Open(path);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return std::move(s).value();
}

FileObject File(const std::string& id, const std::string& owner, int64_t at = 100) {
  FileObject f;
  f.id = id;
  f.owner = owner;
  f.purpose = "batch";
  f.filename = id + ".jsonl";
  f.created_at = at;
  return f;
}

BatchObject Batch(const std::string& id, const std::string& owner = "k1") {
  BatchObject b;
  b.id = id;
  b.owner = owner;
  b.endpoint = "/v1/completions";
  b.input_file_id = "file-in";
  b.completion_window = "24h";
  b.status = BatchStatus::kInProgress;
  b.created_at = 100;
  b.in_progress_at = 100;
  b.expires_at = 100 + 86400;
  return b;
}

std::vector<BatchLine> Lines(int n) {
  std::vector<BatchLine> out;
  for (int i = 0; i < n; ++i) {
    out.push_back({i, "req-" + std::to_string(i), "/v1/completions",
                   R"({"prompt":"p)" + std::to_string(i) + R"("})", "k" + std::to_string(i)});
  }
  return out;
}

LineResult Answer(int status, const std::string& body) {
  LineResult r;
  r.status_code = status;
  r.request_id = "cmpl-x";
  r.body = body;
  return r;
}

std::vector<json> JsonLines(const std::string& text) {
  std::vector<json> out;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = text.find('\n', pos);
    out.push_back(json::parse(text.substr(pos, end - pos)));
    pos = end + 1;
  }
  return out;
}

TEST(BatchStore, FilesKeepTheirBytesAndBelongToTheirOwnerOnly) {
  auto store = OpenStore(NewDbPath());
  const std::string bytes("line one\n\0binary\n", 17);
  ASSERT_TRUE(store->AddFile(File("file-a", "k1"), bytes).ok());
  auto f = store->GetFile("k1", "file-a");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->bytes, 17);
  EXPECT_EQ(f->filename, "file-a.jsonl");
  EXPECT_EQ(*store->FileContent("k1", "file-a"), bytes);
  // Another key sees nothing, and cannot delete it.
  EXPECT_EQ(store->GetFile("k2", "file-a").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store->GetFile("k2", "file-a").status().param(), "file_id");
  EXPECT_EQ(store->FileContent("k2", "file-a").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store->DeleteFile("k2", "file-a").code(), StatusCode::kNotFound);
  Page page;
  EXPECT_TRUE(store->ListFiles("k2", {}, &page).empty());
  ASSERT_TRUE(store->DeleteFile("k1", "file-a").ok());
  EXPECT_EQ(store->GetFile("k1", "file-a").status().code(), StatusCode::kNotFound);
}

TEST(BatchStore, FileListsPageNewestFirstOrOldestFirstAndFilterByPurpose) {
  auto store = OpenStore(NewDbPath());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(store->AddFile(File("file-" + std::to_string(i), "k1", 100 + i), "x").ok());
  }
  FileObject out = File("file-out", "k1", 200);
  out.purpose = "batch_output";
  ASSERT_TRUE(store->AddFile(out, "y").ok());
  FileQuery q;
  q.limit = 2;
  q.purpose = "batch";
  Page page;
  auto first = store->ListFiles("k1", q, &page);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].id, "file-4");
  EXPECT_EQ(first[1].id, "file-3");
  EXPECT_TRUE(page.has_more);
  q.after = first[1].id;
  auto second = store->ListFiles("k1", q, &page);
  ASSERT_EQ(second.size(), 2u);
  EXPECT_EQ(second[0].id, "file-2");
  q.after = "file-1";
  auto last = store->ListFiles("k1", q, &page);
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0].id, "file-0");
  EXPECT_FALSE(page.has_more);
  FileQuery asc;
  asc.ascending = true;
  auto all = store->ListFiles("k1", asc, &page);
  ASSERT_EQ(all.size(), 6u);
  EXPECT_EQ(all[0].id, "file-0");
  EXPECT_EQ(all[5].id, "file-out");
}

int64_t PageCount(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) return -1;
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "PRAGMA page_count", -1, &st, nullptr);
  const int64_t n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
  sqlite3_finalize(st);
  sqlite3_close(db);
  return n;
}

TEST(BatchStore, ADeletedOrExpiredFileGivesItsSpaceBack) {
  const std::string path = NewDbPath();
  auto store = OpenStore(path);
  const int64_t empty = PageCount(path);
  const std::string big(4 << 20, 'x');
  ASSERT_TRUE(store->AddFile(File("file-a", "k1"), big).ok());
  FileObject b = File("file-b", "k1");
  b.expires_at = 200;
  ASSERT_TRUE(store->AddFile(b, big).ok());
  const int64_t full = PageCount(path);
  EXPECT_GT(full, empty + 2 * 900) << "two 4 MiB files in 4 KiB pages";
  ASSERT_TRUE(store->DeleteFile("k1", "file-a").ok());
  EXPECT_EQ(store->DeleteExpiredFiles(200), 1);
  EXPECT_LT(PageCount(path), empty + 50);  // the file shrank back, not only free pages
}

TEST(BatchStore, ExpiredFilesAreDeleted) {
  auto store = OpenStore(NewDbPath());
  FileObject f = File("file-old", "k1");
  f.expires_at = 150;
  ASSERT_TRUE(store->AddFile(f, "x").ok());
  ASSERT_TRUE(store->AddFile(File("file-keep", "k1"), "x").ok());
  EXPECT_EQ(store->DeleteExpiredFiles(149), 0);
  EXPECT_EQ(store->DeleteExpiredFiles(150), 1);
  EXPECT_FALSE(store->GetFile("k1", "file-old").ok());
  EXPECT_TRUE(store->GetFile("k1", "file-keep").ok());
}

TEST(BatchStore, ARecordedLineIsDoneForGoodEvenAfterTheStoreIsReopened) {
  const std::string path = NewDbPath();
  {
    auto store = OpenStore(path);
    ASSERT_TRUE(store->CreateBatch(Batch("batch_1"), Lines(3)).ok());
    auto pending = store->PendingLines("batch_1", 10, {});
    ASSERT_EQ(pending.size(), 3u);
    ASSERT_TRUE(store->RecordLine("batch_1", 1, Answer(200, R"({"id":"cmpl-1"})"), "r1").ok());
    // A second result for the same line is ignored: the first stays.
    ASSERT_TRUE(store->RecordLine("batch_1", 1, Answer(500, R"({"error":{}})"), "r1b").ok());
  }
  auto store = OpenStore(path);
  auto pending = store->PendingLines("batch_1", 10, {});
  ASSERT_EQ(pending.size(), 2u);
  EXPECT_EQ(pending[0].index, 0);
  EXPECT_EQ(pending[1].index, 2);
  // skip leaves out lines already running.
  EXPECT_EQ(store->PendingLines("batch_1", 10, {0}).size(), 1u);
  auto b = store->GetBatch("k1", "batch_1");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->counts.total, 3);
  EXPECT_EQ(b->counts.completed, 1);
  EXPECT_EQ(b->counts.failed, 0);
  EXPECT_EQ(store->Unfinished().size(), 1u);
}

TEST(BatchStore, FinalizeWritesOkAnswersToTheOutputFileAndTheRestToTheErrorFile) {
  auto store = OpenStore(NewDbPath());
  ASSERT_TRUE(store->CreateBatch(Batch("batch_1"), Lines(4)).ok());
  ASSERT_TRUE(
      store->RecordLine("batch_1", 2, Answer(200, R"({"id":"cmpl-2","object":"x"})"), "r2").ok());
  ASSERT_TRUE(store->RecordLine("batch_1", 0, Answer(200, R"({"id":"cmpl-0"})"), "r0").ok());
  ASSERT_TRUE(
      store->RecordLine("batch_1", 1, Answer(400, R"({"error":{"message":"bad"}})"), "r1").ok());
  BatchStore::Final f;
  f.status = BatchStatus::kExpired;
  f.at = 500;
  f.unrun_code = "batch_expired";
  f.unrun_message = "not run in time";
  f.output_file_id = "file-out";
  f.error_file_id = "file-err";
  ASSERT_TRUE(store->Finalize("batch_1", f).ok());
  auto b = store->GetBatch("k1", "batch_1");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->status, BatchStatus::kExpired);
  EXPECT_EQ(b->expired_at, 500);
  EXPECT_EQ(b->output_file_id, "file-out");
  EXPECT_EQ(b->error_file_id, "file-err");
  EXPECT_EQ(b->counts.completed, 2);
  EXPECT_EQ(b->counts.failed, 2);  // the 400 and the line never run
  EXPECT_TRUE(store->Unfinished().empty());

  auto out = JsonLines(*store->FileContent("k1", "file-out"));
  ASSERT_EQ(out.size(), 2u);  // in input order
  EXPECT_EQ(out[0]["custom_id"], "req-0");
  EXPECT_EQ(out[1]["custom_id"], "req-2");
  EXPECT_EQ(out[1]["id"], "r2");
  EXPECT_EQ(out[1]["response"]["status_code"], 200);
  EXPECT_EQ(out[1]["response"]["request_id"], "cmpl-x");
  EXPECT_EQ(out[1]["response"]["body"]["object"], "x");
  EXPECT_TRUE(out[1]["error"].is_null());
  auto err = JsonLines(*store->FileContent("k1", "file-err"));
  ASSERT_EQ(err.size(), 2u);
  EXPECT_EQ(err[0]["custom_id"], "req-1");
  EXPECT_EQ(err[0]["response"]["status_code"], 400);
  EXPECT_EQ(err[0]["response"]["body"]["error"]["message"], "bad");
  EXPECT_EQ(err[1]["custom_id"], "req-3");
  EXPECT_TRUE(err[1]["response"].is_null());
  EXPECT_EQ(err[1]["error"]["code"], "batch_expired");
  EXPECT_EQ(store->GetFile("k1", "file-err")->purpose, "batch_output");
}

TEST(BatchStore, ABatchSumsItsLinesUsageAndTakesTheModelOfItsFirstAnswer) {
  auto store = OpenStore(NewDbPath());
  ASSERT_TRUE(store->CreateBatch(Batch("batch_1"), Lines(3)).ok());
  auto b = store->GetBatch("k1", "batch_1");
  EXPECT_EQ(b->model, "");
  EXPECT_EQ(b->usage.input, 0);
  LineResult r0 = Answer(200, "{}");
  r0.usage = {20, 16, 5, 0};
  r0.model = "served-model";
  ASSERT_TRUE(store->RecordLine("batch_1", 0, r0, "r0").ok());
  LineResult r1 = Answer(200, "{}");
  r1.usage = {30, 0, 7, 2};
  r1.model = "another-name";  // the batch keeps the first
  ASSERT_TRUE(store->RecordLine("batch_1", 1, r1, "r1").ok());
  // A repeated result for a done line counts once.
  ASSERT_TRUE(store->RecordLine("batch_1", 1, r1, "r1b").ok());
  b = store->GetBatch("k1", "batch_1");
  EXPECT_EQ(b->model, "served-model");
  EXPECT_EQ(b->usage.input, 50);
  EXPECT_EQ(b->usage.cached, 16);
  EXPECT_EQ(b->usage.output, 12);
  EXPECT_EQ(b->usage.reasoning, 2);

  // A batch whose lines named a model keeps that name.
  BatchObject named = Batch("batch_2");
  named.model = "SmolLM2";
  ASSERT_TRUE(store->CreateBatch(named, Lines(1)).ok());
  ASSERT_TRUE(store->RecordLine("batch_2", 0, r1, "r2").ok());
  EXPECT_EQ(store->GetBatch("k1", "batch_2")->model, "SmolLM2");
}

TEST(BatchStore, OutputFilesExpireWhenTheBatchAskedAndNeverOtherwise) {
  auto store = OpenStore(NewDbPath());
  BatchObject b = Batch("batch_1");
  b.output_expires_after = 7200;
  ASSERT_TRUE(store->CreateBatch(b, Lines(2)).ok());
  ASSERT_TRUE(store->CreateBatch(Batch("batch_2"), Lines(1)).ok());
  ASSERT_TRUE(store->RecordLine("batch_1", 0, Answer(200, "{}"), "r0").ok());
  ASSERT_TRUE(store->RecordLine("batch_1", 1, Answer(400, "{}"), "r1").ok());
  ASSERT_TRUE(store->RecordLine("batch_2", 0, Answer(200, "{}"), "r2").ok());
  BatchStore::Final f;
  f.at = 1000;
  f.output_file_id = "file-out1";
  f.error_file_id = "file-err1";
  ASSERT_TRUE(store->Finalize("batch_1", f).ok());
  f.output_file_id = "file-out2";
  f.error_file_id = "file-err2";
  ASSERT_TRUE(store->Finalize("batch_2", f).ok());
  EXPECT_EQ(store->GetFile("k1", "file-out1")->expires_at, 1000 + 7200);
  EXPECT_EQ(store->GetFile("k1", "file-err1")->expires_at, 1000 + 7200);
  EXPECT_EQ(store->GetFile("k1", "file-out2")->expires_at, 0);
  EXPECT_EQ(store->DeleteExpiredFiles(1000 + 7200), 2);
  EXPECT_FALSE(store->GetFile("k1", "file-out1").ok());
  EXPECT_TRUE(store->GetFile("k1", "file-out2").ok());
}

TEST(BatchStore, AStoreMadeBeforeUsageWasKeptOpensAndCountsFromThen) {
  const std::string path = NewDbPath();
  {
    // The tables as an older Outpost made them, with one batch half done.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    const char* sql =
        "CREATE TABLE batches(seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL, "
        "owner TEXT NOT NULL, endpoint TEXT NOT NULL, input_file_id TEXT NOT NULL, "
        "completion_window TEXT NOT NULL, status TEXT NOT NULL, created_at INTEGER NOT NULL, "
        "in_progress_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, finalizing_at INTEGER NOT "
        "NULL, completed_at INTEGER NOT NULL, failed_at INTEGER NOT NULL, expired_at INTEGER NOT "
        "NULL, cancelling_at INTEGER NOT NULL, cancelled_at INTEGER NOT NULL, output_file_id TEXT "
        "NOT NULL, error_file_id TEXT NOT NULL, metadata TEXT NOT NULL, errors TEXT NOT NULL, "
        "headers TEXT NOT NULL, total INTEGER NOT NULL);"
        "CREATE TABLE lines(batch_id TEXT NOT NULL, idx INTEGER NOT NULL, custom_id TEXT NOT "
        "NULL, url TEXT NOT NULL, body TEXT NOT NULL, order_key TEXT NOT NULL, state INTEGER NOT "
        "NULL DEFAULT 0, status_code INTEGER NOT NULL DEFAULT 0, request_id TEXT NOT NULL DEFAULT "
        "'', response TEXT NOT NULL DEFAULT '', error_code TEXT NOT NULL DEFAULT '', "
        "error_message TEXT NOT NULL DEFAULT '', result_id TEXT NOT NULL DEFAULT '', PRIMARY "
        "KEY(batch_id, idx));"
        "INSERT INTO batches(id, owner, endpoint, input_file_id, completion_window, status, "
        "created_at, in_progress_at, expires_at, finalizing_at, completed_at, failed_at, "
        "expired_at, cancelling_at, cancelled_at, output_file_id, error_file_id, metadata, "
        "errors, headers, total) VALUES('batch_old', 'k1', '/v1/completions', 'file-in', '24h', "
        "'in_progress', 100, 100, 86500, 0, 0, 0, 0, 0, 0, '', '', 'null', 'null', '{}', 2);"
        "INSERT INTO lines(batch_id, idx, custom_id, url, body, order_key, state, status_code) "
        "VALUES('batch_old', 0, 'a', '/v1/completions', '{}', 'a', 1, 200), ('batch_old', 1, "
        "'b', '/v1/completions', '{}', 'b', 0, 0);";
    ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  auto store = OpenStore(path);
  auto b = store->GetBatch("k1", "batch_old");
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->counts.completed, 1);
  EXPECT_EQ(b->usage.input, 0);  // its line answered before usage was kept
  EXPECT_EQ(b->model, "");
  LineResult r = Answer(200, "{}");
  r.usage = {9, 0, 4, 0};
  r.model = "m";
  ASSERT_TRUE(store->RecordLine("batch_old", 1, r, "r1").ok());
  b = store->GetBatch("k1", "batch_old");
  EXPECT_EQ(b->counts.completed, 2);
  EXPECT_EQ(b->usage.input, 9);
  EXPECT_EQ(b->usage.output, 4);
  EXPECT_EQ(b->model, "m");
  // Opening it again (the columns are there now) changes nothing.
  store.reset();
  store = OpenStore(path);
  EXPECT_EQ(store->GetBatch("k1", "batch_old")->usage.input, 9);
}

TEST(BatchStore, AFinalizedBatchKeepsItsTotalsButNotItsLines) {
  const std::string path = NewDbPath();
  {
    auto store = OpenStore(path);
    ASSERT_TRUE(store->CreateBatch(Batch("batch_1"), Lines(3)).ok());
    ASSERT_TRUE(store->CreateBatch(Batch("batch_2"), Lines(2)).ok());
    LineResult r = Answer(200, R"({"id":"cmpl-0"})");
    r.usage = {10, 4, 3, 0};
    ASSERT_TRUE(store->RecordLine("batch_1", 0, r, "r0").ok());
    ASSERT_TRUE(store->RecordLine("batch_1", 1, Answer(400, "{}"), "r1").ok());
    ASSERT_TRUE(store->RecordLine("batch_2", 0, r, "r2").ok());
    BatchStore::Final f;
    f.status = BatchStatus::kCancelled;
    f.at = 900;
    f.output_file_id = "file-out";
    f.error_file_id = "file-err";
    ASSERT_TRUE(store->Finalize("batch_1", f).ok());
  }
  auto store = OpenStore(path);
  auto b = store->GetBatch("k1", "batch_1");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->counts.total, 3);
  EXPECT_EQ(b->counts.completed, 1);
  EXPECT_EQ(b->counts.failed, 1);
  EXPECT_EQ(b->usage.input, 10);
  EXPECT_EQ(b->usage.cached, 4);
  EXPECT_EQ(b->usage.output, 3);
  EXPECT_EQ(JsonLines(*store->FileContent("k1", "file-out")).size(), 1u);
  // The answers live in the files once; only the running batch has lines.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "SELECT batch_id, COUNT(*) FROM lines GROUP BY batch_id", -1, &st,
                     nullptr);
  std::map<std::string, int> lines;
  while (sqlite3_step(st) == SQLITE_ROW) {
    lines[reinterpret_cast<const char*>(sqlite3_column_text(st, 0))] = sqlite3_column_int(st, 1);
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  EXPECT_EQ(lines, (std::map<std::string, int>{{"batch_2", 2}}));
  EXPECT_EQ(store->GetBatch("k1", "batch_2")->counts.completed, 1);
}

TEST(BatchStore, AnAllGoodBatchHasNoErrorFile) {
  auto store = OpenStore(NewDbPath());
  ASSERT_TRUE(store->CreateBatch(Batch("batch_1"), Lines(1)).ok());
  ASSERT_TRUE(store->RecordLine("batch_1", 0, Answer(200, "{}"), "r0").ok());
  BatchStore::Final f;
  f.at = 300;
  f.output_file_id = "file-out";
  f.error_file_id = "file-err";
  ASSERT_TRUE(store->MarkFinalizing("batch_1", 290).ok());
  ASSERT_TRUE(store->Finalize("batch_1", f).ok());
  auto b = store->GetBatch("k1", "batch_1");
  EXPECT_EQ(b->status, BatchStatus::kCompleted);
  EXPECT_EQ(b->finalizing_at, 290);
  EXPECT_EQ(b->completed_at, 300);
  EXPECT_EQ(b->error_file_id, "");
  EXPECT_FALSE(store->GetFile("k1", "file-err").ok());
}

TEST(BatchStore, CancelMovesAnInProgressBatchToCancellingAndRefusesAFinishedOne) {
  auto store = OpenStore(NewDbPath());
  ASSERT_TRUE(store->CreateBatch(Batch("batch_1"), Lines(2)).ok());
  auto c = store->Cancel("k1", "batch_1", 200);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->status, BatchStatus::kCancelling);
  EXPECT_EQ(c->cancelling_at, 200);
  EXPECT_TRUE(store->Cancel("k1", "batch_1", 201).ok());  // again: the same answer
  EXPECT_EQ(store->Cancel("k2", "batch_1", 201).status().code(), StatusCode::kNotFound);
  BatchStore::Final f;
  f.status = BatchStatus::kCancelled;
  f.at = 210;
  ASSERT_TRUE(store->Finalize("batch_1", f).ok());
  ASSERT_TRUE(store->CreateBatch(Batch("batch_2"), Lines(1)).ok());
  ASSERT_TRUE(store->RecordLine("batch_2", 0, Answer(200, "{}"), "r").ok());
  BatchStore::Final done;
  done.at = 220;
  done.output_file_id = "file-o2";
  ASSERT_TRUE(store->Finalize("batch_2", done).ok());
  auto refused = store->Cancel("k1", "batch_2", 230);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("completed"), std::string::npos);
}

TEST(BatchStore, BatchListsPageNewestFirstPerOwner) {
  auto store = OpenStore(NewDbPath());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(store->CreateBatch(Batch("batch_" + std::to_string(i)), Lines(1)).ok());
  }
  ASSERT_TRUE(store->CreateBatch(Batch("batch_other", "k2"), Lines(1)).ok());
  Page page;
  auto first = store->ListBatches("k1", "", 2, &page);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].id, "batch_2");
  EXPECT_TRUE(page.has_more);
  auto rest = store->ListBatches("k1", "batch_1", 2, &page);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].id, "batch_0");
  EXPECT_FALSE(page.has_more);
}

}  // namespace
}  // namespace outpost::batch

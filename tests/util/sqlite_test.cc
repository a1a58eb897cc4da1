// SqliteDb (util/sqlite.h): the incremental-vacuum mode a store asks for, on
// a new file and on a file an older version made without it, and the pages
// that come back to the file system after bulk deletes. The stores' own
// tests (response_store_test.cc, conversation_store_test.cc) check the same
// through their deletes and expiries.
#include "outpost/util/sqlite.h"

#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <string>

#include "mocks/temp_file.h"

namespace outpost::util {
namespace {

constexpr std::array<const char*, 1> kSchema = {
    "CREATE TABLE IF NOT EXISTS blobs(id INTEGER PRIMARY KEY, body TEXT NOT NULL)"};

// ~2 MB in 100 rows, then every row deleted.
void FillThenEmpty(SqliteDb& db) {
  const std::string big(20000, 'x');
  for (int i = 0; i < 100; ++i) {
    Stmt ins(db.get(), "INSERT INTO blobs(body) VALUES(?)");
    ASSERT_TRUE(ins.ok());
    ins.Bind(1, big);
    ASSERT_TRUE(ins.Run().ok());
  }
  ASSERT_TRUE(db.Exec("DELETE FROM blobs").ok());
}

int64_t Rows(SqliteDb& db) {
  Stmt q(db.get(), "SELECT count(*) FROM blobs");
  EXPECT_EQ(sqlite3_step(q.get()), SQLITE_ROW);
  return sqlite3_column_int64(q.get(), 0);
}

TEST(SqliteDb, ANewFileTakesIncrementalVacuumAndGivesDeletedPagesBack) {
  const std::string path = testing::TempPath(".db");
  {
    auto db = SqliteDb::Open(path, "test store", false, kSchema, /*incremental_vacuum=*/true);
    ASSERT_TRUE(db.ok()) << db.status().message();
    EXPECT_EQ((*db)->AutoVacuumMode(), 2);
    FillThenEmpty(**db);
    (*db)->IncrementalVacuum();
  }
  EXPECT_LT(std::filesystem::file_size(path), 100'000u);
}

TEST(SqliteDb, WithoutItAFileKeepsItsFreePages) {
  const std::string path = testing::TempPath(".db");
  {
    auto db = SqliteDb::Open(path, "test store", false, kSchema);
    ASSERT_TRUE(db.ok());
    EXPECT_EQ((*db)->AutoVacuumMode(), 0);
    FillThenEmpty(**db);
    (*db)->IncrementalVacuum();  // a no-op here
  }
  EXPECT_GT(std::filesystem::file_size(path), 2'000'000u);
}

// A file an older version made (no incremental vacuum, its deletes' pages
// free inside it) is rewritten at the first Open that asks for the mode:
// its free pages go back at once, its rows stay, and later deletes give
// theirs back too.
TEST(SqliteDb, AnOlderFileIsRewrittenOnceToTakeIncrementalVacuum) {
  const std::string path = testing::TempPath(".db");
  {
    auto db = SqliteDb::Open(path, "test store", false, kSchema);
    ASSERT_TRUE(db.ok());
    FillThenEmpty(**db);
    ASSERT_TRUE((*db)->Exec("INSERT INTO blobs(body) VALUES('kept')").ok());
  }
  ASSERT_GT(std::filesystem::file_size(path), 2'000'000u);
  {
    auto db = SqliteDb::Open(path, "test store", false, kSchema, /*incremental_vacuum=*/true);
    ASSERT_TRUE(db.ok()) << db.status().message();
    EXPECT_EQ((*db)->AutoVacuumMode(), 2);
    EXPECT_EQ(Rows(**db), 1);
  }
  EXPECT_LT(std::filesystem::file_size(path), 100'000u);
  {
    auto db = SqliteDb::Open(path, "test store", false, kSchema, /*incremental_vacuum=*/true);
    ASSERT_TRUE(db.ok());
    FillThenEmpty(**db);
    (*db)->IncrementalVacuum();
    EXPECT_EQ(Rows(**db), 0);
  }
  EXPECT_LT(std::filesystem::file_size(path), 100'000u);
}

}  // namespace
}  // namespace outpost::util

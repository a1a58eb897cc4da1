#include "outpost/api/response_store.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "mocks/temp_file.h"
#include "outpost/util/sqlite.h"

namespace outpost::api {
namespace {

std::string NewDbPath() {
  return testing::TempPath(".db");
}

StoredResponse Record(const std::string& id, const std::string& owner, int64_t expires_at) {
  StoredResponse r;
  r.id = id;
  r.owner = owner;
  r.created_at = 100;
  r.expires_at = expires_at;
  r.response = R"({"id":")" + id + R"(","object":"response"})";
  r.input_items = R"([{"id":"msg_1"}])";
  r.context = R"([{"role":"user","content":"hi"}])";
  return r;
}

TEST(ResponseStore, KeepsARecordForItsOwnerUntilItExpires) {
  auto s = ResponseStore::Open(NewDbPath());
  ASSERT_TRUE(s.ok()) << s.status().message();
  ResponseStore& store = **s;
  ASSERT_TRUE(store.Put(Record("resp_a", "k1", 1000), 100).ok());
  auto got = store.Get("k1", "resp_a", 500);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got->response, R"({"id":"resp_a","object":"response"})");
  EXPECT_EQ(got->input_items, R"([{"id":"msg_1"}])");
  EXPECT_EQ(got->context, R"([{"role":"user","content":"hi"}])");
  EXPECT_EQ(got->created_at, 100);
  EXPECT_EQ(got->expires_at, 1000);

  // Another owner's id is unknown, and so is an expired one.
  auto other = store.Get("k2", "resp_a", 500);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(other.status().param(), "response_id");
  EXPECT_FALSE(store.Get("k1", "resp_a", 1000).ok());
  auto named = store.Get("k1", "resp_zz", 500, "previous_response_id");
  EXPECT_EQ(named.status().param(), "previous_response_id");
  EXPECT_NE(named.status().message().find("resp_zz"), std::string::npos);

  // The next Put deletes what expired.
  EXPECT_EQ(store.Count(), 1);
  ASSERT_TRUE(store.Put(Record("resp_b", "k1", 5000), 2000).ok());
  EXPECT_EQ(store.Count(), 1);
  EXPECT_TRUE(store.Get("k1", "resp_b", 2000).ok());
}

TEST(ResponseStore, DeletesOnlyTheOwnersLiveRecords) {
  auto s = ResponseStore::Open(NewDbPath());
  ASSERT_TRUE(s.ok());
  ResponseStore& store = **s;
  ASSERT_TRUE(store.Put(Record("resp_a", "k1", 1000), 100).ok());
  EXPECT_EQ(store.Delete("k2", "resp_a", 100).code(), StatusCode::kNotFound);
  EXPECT_TRUE(store.Get("k1", "resp_a", 100).ok());
  EXPECT_TRUE(store.Delete("k1", "resp_a", 100).ok());
  EXPECT_FALSE(store.Get("k1", "resp_a", 100).ok());
  EXPECT_EQ(store.Delete("k1", "resp_a", 100).code(), StatusCode::kNotFound);
}

TEST(ResponseStore, ARecordOutlivesTheProcessAndOneProcessHoldsTheFile) {
  const std::string path = NewDbPath();
  {
    auto s = ResponseStore::Open(path);
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE((*s)->Put(Record("resp_a", "", 1000), 100).ok());
    auto second = ResponseStore::Open(path);
    ASSERT_FALSE(second.ok());
    EXPECT_NE(second.status().message().find("another outpost process"), std::string::npos);
  }
  auto s = ResponseStore::Open(path);
  ASSERT_TRUE(s.ok()) << s.status().message();
  auto got = (*s)->Get("", "resp_a", 200);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->context, R"([{"role":"user","content":"hi"}])");
}

// The file's size once closed (the WAL checkpointed into it).
uintmax_t ClosedSize(const std::string& path) {
  return std::filesystem::file_size(path);
}

TEST(ResponseStore, WhatExpiresOrIsDeletedGoesBackToTheDisk) {
  const std::string path = NewDbPath();
  const std::string big(20000, 'x');
  auto fill = [&](ResponseStore& store, const std::string& prefix, int64_t expires_at) {
    for (int i = 0; i < 100; ++i) {
      StoredResponse r = Record(prefix + std::to_string(i), "k1", expires_at);
      r.context = R"([{"role":"user","content":")" + big + R"("}])";
      ASSERT_TRUE(store.Put(r, 100).ok());
    }
  };
  {
    auto s = ResponseStore::Open(path);
    ASSERT_TRUE(s.ok()) << s.status().message();
    fill(**s, "resp_", 1000);
  }
  const uintmax_t full = ClosedSize(path);
  ASSERT_GT(full, 2'000'000u);
  {
    auto s = ResponseStore::Open(path);
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE((*s)->Put(Record("resp_next", "k1", 5000), 2000).ok());  // the 100 expired
    EXPECT_EQ((*s)->Count(), 1);
  }
  EXPECT_LT(ClosedSize(path), full / 10);
  {
    auto s = ResponseStore::Open(path);
    ASSERT_TRUE(s.ok());
    fill(**s, "resp_d", 9000);
    for (int i = 0; i < 100; ++i) {
      ASSERT_TRUE((*s)->Delete("k1", "resp_d" + std::to_string(i), 200).ok());
    }
  }
  EXPECT_LT(ClosedSize(path), full / 10);
}

TEST(ResponseStore, ABackgroundRunLeftUnfinishedFailsAtTheNextOpen) {
  const std::string path = NewDbPath();
  {
    auto s = ResponseStore::Open(path);
    ASSERT_TRUE(s.ok());
    for (const char* status : {"queued", "in_progress", "completed", "cancelled"}) {
      StoredResponse r = Record(std::string("resp_") + status, "", 1000);
      r.response = std::string(R"({"id":"x","status":")") + status + R"(","error":null})";
      ASSERT_TRUE((*s)->Put(r, 100).ok());
    }
  }
  auto s = ResponseStore::Open(path);
  ASSERT_TRUE(s.ok()) << s.status().message();
  for (const char* status : {"queued", "in_progress"}) {
    auto got = (*s)->Get("", std::string("resp_") + status, 200);
    ASSERT_TRUE(got.ok());
    EXPECT_NE(got->response.find(R"("status":"failed")"), std::string::npos) << got->response;
    EXPECT_NE(got->response.find("the server stopped"), std::string::npos) << got->response;
  }
  EXPECT_EQ((*s)->Get("", "resp_completed", 200)->response,
            R"({"id":"x","status":"completed","error":null})");
  EXPECT_EQ((*s)->Get("", "resp_cancelled", 200)->response,
            R"({"id":"x","status":"cancelled","error":null})");
}

TEST(ResponseStore, ABackgroundRunWithItsRequestIsUnfinishedAtTheNextOpen) {
  const std::string path = NewDbPath();
  {
    auto s = ResponseStore::Open(path);
    ASSERT_TRUE(s.ok());
    int n = 0;
    for (const char* status : {"in_progress", "queued", "completed"}) {
      StoredResponse r = Record(std::string("resp_") + status, "k1", 1000);
      r.created_at = 100 + n++;
      r.response = std::string(R"({"id":"x","status":")") + status + R"("})";
      r.request = R"({"body":"{}","headers":{}})";
      ASSERT_TRUE((*s)->Put(r, 100).ok());
    }
    StoredResponse gone = Record("resp_expired", "k1", 150);
    gone.response = R"({"status":"queued"})";
    gone.request = R"({"body":"{}"})";
    ASSERT_TRUE((*s)->Put(gone, 100).ok());
  }
  auto s = ResponseStore::Open(path);
  ASSERT_TRUE(s.ok()) << s.status().message();
  auto runs = (*s)->Unfinished(200);
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  ASSERT_EQ(runs->size(), 2u);  // oldest first; not the answered one, nor the expired
  EXPECT_EQ((*runs)[0].id, "resp_in_progress");
  EXPECT_EQ((*runs)[1].id, "resp_queued");
  EXPECT_EQ((*runs)[0].owner, "k1");
  EXPECT_EQ((*runs)[0].request, R"({"body":"{}","headers":{}})");
  EXPECT_EQ((*runs)[1].response, R"({"id":"x","status":"queued"})");  // not failed
  // Get reads the request too; a Put without one clears it.
  EXPECT_EQ((*s)->Get("k1", "resp_queued", 200)->request, R"({"body":"{}","headers":{}})");
  StoredResponse answered = (*runs)[1];
  answered.response = R"({"id":"x","status":"completed"})";
  answered.request.clear();
  ASSERT_TRUE((*s)->Put(answered, 200).ok());
  EXPECT_EQ((*s)->Unfinished(200)->size(), 1u);
}

TEST(ResponseStore, AStoreFromBeforeRunsWereResumedGainsTheColumn) {
  const std::string path = NewDbPath();
  {
    auto db = util::SqliteDb::Open(path, "old store");
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)
                    ->Exec("CREATE TABLE responses(id TEXT PRIMARY KEY, owner TEXT NOT NULL, "
                           "created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, response "
                           "TEXT NOT NULL, input_items TEXT NOT NULL, context TEXT NOT NULL)")
                    .ok());
    ASSERT_TRUE((*db)
                    ->Exec("INSERT INTO responses VALUES('resp_old', '', 1, 1000, "
                           "'{\"status\":\"queued\"}', '[]', '[]')")
                    .ok());
  }
  auto s = ResponseStore::Open(path);
  ASSERT_TRUE(s.ok()) << s.status().message();
  // Left unfinished with no request to run it again: failed, as before.
  auto old = (*s)->Get("", "resp_old", 10);
  ASSERT_TRUE(old.ok());
  EXPECT_NE(old->response.find(R"("status":"failed")"), std::string::npos) << old->response;
  EXPECT_EQ(old->request, "");
  EXPECT_TRUE((*s)->Unfinished(10)->empty());
  StoredResponse r = Record("resp_new", "", 1000);
  r.request = "{}";
  ASSERT_TRUE((*s)->Put(r, 10).ok());
  EXPECT_EQ((*s)->Get("", "resp_new", 10)->request, "{}");
}

TEST(ResponseStore, AnUnwritablePlaceIsUnavailableNamingThePath) {
  auto s = ResponseStore::Open("/nonexistent-dir/x/responses.db");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(s.status().message().find("/nonexistent-dir/x/responses.db"), std::string::npos);
}

TEST(ResponseStore, ItemsAreFoundByIdWhileTheirResponseLives) {
  auto s = ResponseStore::Open(NewDbPath());
  ASSERT_TRUE(s.ok());
  ResponseStore& store = **s;
  StoredResponse a = Record("resp_a", "k1", 1000);
  a.items = {{"msg_in", R"({"id":"msg_in","role":"user"})"},
             {"fc_1", R"({"id":"fc_1","type":"function_call"})"}};
  ASSERT_TRUE(store.Put(a, 100).ok());
  auto got = store.Item("k1", "fc_1", 500, "input[0].id");
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(*got, R"({"id":"fc_1","type":"function_call"})");
  auto other = store.Item("k2", "fc_1", 500, "input[0].id");
  EXPECT_EQ(other.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(other.status().param(), "input[0].id");
  EXPECT_NE(other.status().message().find("fc_1"), std::string::npos);
  // A later response bringing the same id wins; replacing a response
  // replaces its items.
  StoredResponse b = Record("resp_b", "k1", 3000);
  b.items = {{"fc_1", R"({"id":"fc_1","v":2})"}};
  ASSERT_TRUE(store.Put(b, 200).ok());
  EXPECT_EQ(*store.Item("k1", "fc_1", 500, "p"), R"({"id":"fc_1","v":2})");
  a.items = {};
  ASSERT_TRUE(store.Put(a, 300).ok());
  EXPECT_FALSE(store.Item("k1", "msg_in", 500, "p").ok());
  // Expiry and deletion take the items with them.
  EXPECT_FALSE(store.Item("k1", "fc_1", 3000, "p").ok());
  ASSERT_TRUE(store.Delete("k1", "resp_b", 500).ok());
  EXPECT_FALSE(store.Item("k1", "fc_1", 500, "p").ok());
}

}  // namespace
}  // namespace outpost::api

#include "outpost/api/conversation_store.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "mocks/temp_file.h"

namespace outpost::api {
namespace {

std::string NewDbPath() {
  return testing::TempPath(".db");
}

StoredConversation Conv(const std::string& id, const std::string& owner) {
  StoredConversation c;
  c.id = id;
  c.owner = owner;
  c.created_at = 100;
  c.metadata = R"({"topic":"pumps"})";
  return c;
}

ConversationItem Item(const std::string& id) {
  return {id, R"({"id":")" + id + R"(","type":"message"})"};
}

std::vector<std::string> Ids(const std::vector<ConversationItem>& items) {
  std::vector<std::string> out;
  for (const auto& i : items) out.push_back(i.id);
  return out;
}

TEST(ConversationStore, KeepsItemsInOrderForTheOwner) {
  auto s = ConversationStore::Open(NewDbPath(), 1000);
  ASSERT_TRUE(s.ok()) << s.status().message();
  ConversationStore& store = **s;
  ASSERT_TRUE(store.Create(Conv("conv_a", "k1"), {Item("msg_1"), Item("msg_2")}, 100).ok());
  ASSERT_TRUE(store.Append("k1", "conv_a", {Item("msg_3"), Item("fc_4")}, 150).ok());
  auto items = store.Items("k1", "conv_a", 200);
  ASSERT_TRUE(items.ok()) << items.status().message();
  EXPECT_EQ(Ids(*items), (std::vector<std::string>{"msg_1", "msg_2", "msg_3", "fc_4"}));
  EXPECT_EQ((*items)[3].item, R"({"id":"fc_4","type":"message"})");
  auto c = store.Get("k1", "conv_a", 200);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->metadata, R"({"topic":"pumps"})");
  EXPECT_EQ(c->created_at, 100);

  // Another owner sees nothing and can change nothing; every call names the id.
  for (const Status& st :
       {store.Get("k2", "conv_a", 200).status(), store.Items("k2", "conv_a", 200).status(),
        store.Append("k2", "conv_a", {Item("msg_x")}, 200),
        store.SetMetadata("k2", "conv_a", "{}", 200), store.Delete("k2", "conv_a", 200),
        store.Item("k2", "conv_a", "msg_1", 200).status(),
        store.DeleteItem("k2", "conv_a", "msg_1", 200)}) {
    EXPECT_EQ(st.code(), StatusCode::kNotFound);
    EXPECT_EQ(st.param(), "conversation_id");
    EXPECT_NE(st.message().find("conv_a"), std::string::npos) << st.message();
  }
  EXPECT_EQ(store.Items("k1", "conv_a", 200)->size(), 4u);
  EXPECT_EQ(store.Items("k1", "conv_nope", 200, "conversation").status().param(), "conversation");
}

TEST(ConversationStore, OneItemIsReadAndDeletedByItsId) {
  auto s = ConversationStore::Open(NewDbPath(), 1000);
  ASSERT_TRUE(s.ok());
  ConversationStore& store = **s;
  ASSERT_TRUE(store.Create(Conv("conv_a", ""), {Item("msg_1"), Item("msg_2")}, 100).ok());
  auto one = store.Item("", "conv_a", "msg_2", 100);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->item, R"({"id":"msg_2","type":"message"})");
  auto missing = store.Item("", "conv_a", "msg_9", 100);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().param(), "item_id");
  ASSERT_TRUE(store.DeleteItem("", "conv_a", "msg_1", 100).ok());
  EXPECT_EQ(Ids(*store.Items("", "conv_a", 100)), std::vector<std::string>{"msg_2"});
  EXPECT_EQ(store.DeleteItem("", "conv_a", "msg_1", 100).param(), "item_id");
  // Appending after a deletion still goes at the end.
  ASSERT_TRUE(store.Append("", "conv_a", {Item("msg_3")}, 100).ok());
  EXPECT_EQ(Ids(*store.Items("", "conv_a", 100)), (std::vector<std::string>{"msg_2", "msg_3"}));
}

TEST(ConversationStore, UseKeepsAConversationAliveAndIdleOnesGo) {
  auto s = ConversationStore::Open(NewDbPath(), 1000);
  ASSERT_TRUE(s.ok());
  ConversationStore& store = **s;
  ASSERT_TRUE(store.Create(Conv("conv_a", ""), {Item("msg_1")}, 100).ok());
  ASSERT_TRUE(store.Create(Conv("conv_b", ""), {}, 100).ok());
  // conv_a is used at 900: it lives to 1900. conv_b, idle, ends at 1100.
  ASSERT_TRUE(store.Append("", "conv_a", {Item("msg_2")}, 900).ok());
  EXPECT_TRUE(store.Get("", "conv_b", 1099).ok());
  EXPECT_EQ(store.Get("", "conv_b", 1100).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(store.Get("", "conv_a", 1800).ok());
  ASSERT_TRUE(store.SetMetadata("", "conv_a", R"({"k":"v"})", 1800).ok());
  EXPECT_EQ(store.Get("", "conv_a", 2700)->metadata, R"({"k":"v"})");
  // The next Create deletes the idle one, items and all.
  EXPECT_EQ(store.Count(), 2);
  ASSERT_TRUE(store.Create(Conv("conv_c", ""), {}, 2000).ok());
  EXPECT_EQ(store.Count(), 2);
  // A duplicate id is refused, not merged.
  EXPECT_FALSE(store.Create(Conv("conv_c", ""), {}, 2000).ok());
}

TEST(ConversationStore, DeleteTakesTheItemsAndSurvivesRestart) {
  const std::string path = NewDbPath();
  {
    auto s = ConversationStore::Open(path, 1000);
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE((*s)->Create(Conv("conv_a", ""), {Item("msg_1")}, 100).ok());
    ASSERT_TRUE((*s)->Create(Conv("conv_b", ""), {Item("msg_2")}, 100).ok());
    ASSERT_TRUE((*s)->Delete("", "conv_b", 100).ok());
    EXPECT_EQ((*s)->Delete("", "conv_b", 100).code(), StatusCode::kNotFound);
    auto second = ConversationStore::Open(path, 1000);
    ASSERT_FALSE(second.ok());
    EXPECT_NE(second.status().message().find("another outpost process"), std::string::npos);
  }
  auto s = ConversationStore::Open(path, 1000);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(Ids(*(*s)->Items("", "conv_a", 200)), std::vector<std::string>{"msg_1"});
  EXPECT_FALSE((*s)->Get("", "conv_b", 200).ok());
  EXPECT_EQ((*s)->Count(), 1);
}

TEST(ConversationStore, WhatGoesIdleOrIsDeletedGoesBackToTheDisk) {
  const std::string path = NewDbPath();
  const std::string big(20000, 'x');
  auto fill = [&](ConversationStore& store, const std::string& prefix, int64_t now) {
    for (int i = 0; i < 100; ++i) {
      ASSERT_TRUE(store.Create(Conv(prefix + std::to_string(i), "k1"), {{"msg_1", big}}, now).ok());
    }
  };
  {
    auto s = ConversationStore::Open(path, 1000);
    ASSERT_TRUE(s.ok()) << s.status().message();
    fill(**s, "conv_", 100);
  }
  const uintmax_t full = std::filesystem::file_size(path);
  ASSERT_GT(full, 2'000'000u);
  {
    auto s = ConversationStore::Open(path, 1000);
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE((*s)->Create(Conv("conv_next", "k1"), {}, 5000).ok());  // the 100 went idle
  }
  EXPECT_LT(std::filesystem::file_size(path), full / 10);
  {
    auto s = ConversationStore::Open(path, 1000);
    ASSERT_TRUE(s.ok());
    fill(**s, "conv_d", 5000);
    for (int i = 0; i < 100; ++i) {
      ASSERT_TRUE((*s)->Delete("k1", "conv_d" + std::to_string(i), 5000).ok());
    }
  }
  EXPECT_LT(std::filesystem::file_size(path), full / 10);
}

TEST(ConversationStore, OneTurnAtATimeHoldsAConversation) {
  auto s = ConversationStore::Open(NewDbPath(), 1000);
  ASSERT_TRUE(s.ok());
  ConversationStore& store = **s;
  ASSERT_TRUE(store.Create(Conv("conv_a", "k1"), {Item("msg_1")}, 100).ok());
  ASSERT_TRUE(store.Create(Conv("conv_b", "k1"), {}, 100).ok());

  auto first = store.Hold("k1", "conv_a", 110);
  ASSERT_TRUE(first.ok()) << first.status().message();
  // A second turn on it is refused the way OpenAI refuses it.
  auto second = store.Hold("k1", "conv_a", 111);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(second.status().error_code(), "conversation_locked");
  EXPECT_EQ(second.status().param(), "conversation");
  EXPECT_NE(second.status().message().find("conv_a"), std::string::npos);
  // Another conversation, reads and appends by the holder go on.
  EXPECT_TRUE(store.Hold("k1", "conv_b", 111).ok());
  EXPECT_TRUE(store.Items("k1", "conv_a", 111).ok());
  EXPECT_TRUE(store.Append("k1", "conv_a", {Item("msg_2")}, 112).ok());
  // An unknown or another owner's id is NotFound, not locked.
  EXPECT_EQ(store.Hold("k2", "conv_a", 112).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store.Hold("k1", "conv_z", 112, "conversation_id").status().param(), "conversation_id");

  // Release frees it; releasing twice (and then the destructor) is harmless.
  (*first)->Release();
  (*first)->Release();
  auto third = store.Hold("k1", "conv_a", 113);
  ASSERT_TRUE(third.ok());
  EXPECT_FALSE(store.Hold("k1", "conv_a", 113).ok());
  // The last owner of a hold going releases it.
  third = Status::NotFound("gone");
  first = Status::NotFound("gone");
  EXPECT_TRUE(store.Hold("k1", "conv_a", 114).ok());
}

TEST(ConversationStore, AHoldMayOutliveItsStore) {
  std::shared_ptr<ConversationHold> hold;
  {
    auto s = ConversationStore::Open(NewDbPath(), 1000);
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE((*s)->Create(Conv("conv_a", ""), {}, 100).ok());
    auto h = (*s)->Hold("", "conv_a", 100);
    ASSERT_TRUE(h.ok());
    hold = *h;
  }
  hold->Release();  // no store: nothing to touch but the shared set
  hold.reset();
}

TEST(ConversationStore, AnUnwritablePathIsNamed) {
  auto s = ConversationStore::Open("/proc/no-such-dir/conversations.db", 1000);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("/proc/no-such-dir/conversations.db"), std::string::npos);
}

}  // namespace
}  // namespace outpost::api

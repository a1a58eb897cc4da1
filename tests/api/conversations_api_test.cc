#include "outpost/api/conversations_api.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <tuple>
#include <vector>

#include "mocks/seeded_random.h"
#include "mocks/sim_clock.h"
#include "mocks/temp_file.h"

namespace outpost::api {
namespace {

using nlohmann::json;

class ConversationsApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = testing::TempPath(".db");
    auto s = ConversationStore::Open(path, 3600);
    ASSERT_TRUE(s.ok()) << s.status().message();
    store_ = std::move(s).value();
    const std::string rpath = testing::TempPath(".db");
    auto r = ResponseStore::Open(rpath);
    ASSERT_TRUE(r.ok()) << r.status().message();
    responses_ = std::move(r).value();
  }

  HttpResponse Call(const std::string& method, const std::string& target, const std::string& body,
                    const std::string& owner = "k1", bool with_store = true) {
    HttpRequest req;
    req.method = method;
    const size_t q = target.find('?');
    req.path = target.substr(0, q);
    if (q != std::string::npos) req.query = target.substr(q + 1);
    req.body = body;
    HttpResponse res;
    ServeConversations(with_store ? store_.get() : nullptr, with_store ? responses_.get() : nullptr,
                       req, res, owner, clock_, random_);
    return res;
  }

  json CallJson(const std::string& method, const std::string& target, const json& body,
                const std::string& owner = "k1") {
    HttpResponse res = Call(method, target, body.is_null() ? "" : body.dump(), owner);
    EXPECT_EQ(res.status, 200) << method << " " << target << ": " << res.body;
    return json::parse(res.body, nullptr, false);
  }

  std::unique_ptr<ConversationStore> store_;
  std::unique_ptr<ResponseStore> responses_;
  testing::SimClock clock_;
  testing::SeededRandom random_{7};
};

json Message(const std::string& role, const std::string& text) {
  return {{"type", "message"}, {"role", role}, {"content", text}};
}

TEST_F(ConversationsApiTest, ALifecycleAsOpenAIsClientSeesIt) {
  const json created = CallJson(
      "POST", "/v1/conversations",
      {{"items", {Message("user", "Pump 3 is loud."), Message("assistant", "Check bearing.")}},
       {"metadata", {{"line", "A"}}}});
  EXPECT_EQ(created["object"], "conversation");
  EXPECT_EQ(created["metadata"], json({{"line", "A"}}));
  EXPECT_EQ(created["created_at"], clock_.UnixSeconds());
  const std::string id = created["id"];
  EXPECT_EQ(id.rfind("conv_", 0), 0u);
  EXPECT_EQ(CallJson("GET", "/v1/conversations/" + id, nullptr), created);

  // Items as listed: typed, content as parts, ids; newest first by default.
  const json listed = CallJson("GET", "/v1/conversations/" + id + "/items", nullptr);
  EXPECT_EQ(listed["object"], "list");
  ASSERT_EQ(listed["data"].size(), 2u);
  EXPECT_EQ(listed["data"][0]["role"], "assistant");
  EXPECT_EQ(listed["data"][0]["content"][0],
            json({{"type", "output_text"}, {"text", "Check bearing."}}));
  EXPECT_EQ(listed["data"][1]["content"][0]["type"], "input_text");
  EXPECT_EQ(listed["first_id"], listed["data"][0]["id"]);
  EXPECT_FALSE(listed["has_more"].get<bool>());

  // Added items come back with ids, and go at the end.
  const json added = CallJson(
      "POST", "/v1/conversations/" + id + "/items",
      {{"items",
        {{{"type", "function_call"}, {"call_id", "c1"}, {"name", "rpm"}, {"arguments", "{}"}},
         {{"type", "function_call_output"}, {"call_id", "c1"}, {"output", "1450"}}}}});
  ASSERT_EQ(added["data"].size(), 2u);
  const std::string fc = added["data"][0]["id"];
  EXPECT_EQ(fc.rfind("fc_", 0), 0u);
  const json asc = CallJson("GET", "/v1/conversations/" + id + "/items?order=asc&limit=3", nullptr);
  ASSERT_EQ(asc["data"].size(), 3u);
  EXPECT_EQ(asc["data"][2]["id"], fc);
  EXPECT_TRUE(asc["has_more"].get<bool>());
  const json rest =
      CallJson("GET", "/v1/conversations/" + id + "/items?order=asc&after=" + fc, nullptr);
  ASSERT_EQ(rest["data"].size(), 1u);
  EXPECT_EQ(rest["data"][0]["type"], "function_call_output");

  // One item, then its deletion (answered with the conversation).
  EXPECT_EQ(CallJson("GET", "/v1/conversations/" + id + "/items/" + fc, nullptr)["name"], "rpm");
  EXPECT_EQ(CallJson("DELETE", "/v1/conversations/" + id + "/items/" + fc, nullptr)["id"], id);
  EXPECT_EQ(Call("GET", "/v1/conversations/" + id + "/items/" + fc, "").status, 404);
  EXPECT_EQ(CallJson("GET", "/v1/conversations/" + id + "/items", nullptr)["data"].size(), 3u);

  // Metadata replaced; then the conversation deleted.
  const json updated = CallJson("POST", "/v1/conversations/" + id, {{"metadata", {{"line", "B"}}}});
  EXPECT_EQ(updated["metadata"], json({{"line", "B"}}));
  EXPECT_EQ(CallJson("DELETE", "/v1/conversations/" + id, nullptr),
            json({{"id", id}, {"object", "conversation.deleted"}, {"deleted", true}}));
  EXPECT_EQ(Call("GET", "/v1/conversations/" + id, "").status, 404);
}

TEST_F(ConversationsApiTest, AnEmptyBodyMakesAnEmptyConversation) {
  const json c = CallJson("POST", "/v1/conversations", nullptr);
  EXPECT_EQ(c["metadata"], json::object());
  const json items =
      CallJson("GET", "/v1/conversations/" + c["id"].get<std::string>() + "/items", nullptr);
  EXPECT_TRUE(items["data"].empty());
  EXPECT_TRUE(items["first_id"].is_null());
}

TEST_F(ConversationsApiTest, BadCallsAreNamedAndChangeNothing) {
  const std::string id =
      CallJson("POST", "/v1/conversations", {{"items", {Message("user", "hi")}}})["id"];
  const std::string c = "/v1/conversations/" + id;
  json many = json::array();
  for (int i = 0; i < 21; ++i) many.push_back(Message("user", "x"));
  json big_meta = json::object();
  for (int i = 0; i < 17; ++i) big_meta["k" + std::to_string(i)] = "v";
  struct Case {
    const char* name;
    std::string method, target, body;
    int status;
    const char* param;  // "" = not checked
  };
  const Case cases[] = {
      {"not json", "POST", "/v1/conversations", "{nope", 400, ""},
      {"an array body", "POST", "/v1/conversations", "[]", 400, ""},
      {"items not an array", "POST", "/v1/conversations", R"({"items": "hi"})", 400, "items"},
      {"21 items", "POST", "/v1/conversations", json({{"items", many}}).dump(), 400, "items"},
      {"an item without a role", "POST", "/v1/conversations",
       R"({"items": [{"type": "message", "content": "x"}]})", 400, "items[0].role"},
      {"an unknown item type", "POST", "/v1/conversations",
       R"({"items": [{"type": "web_search_call"}]})", 400, "items[0].type"},
      {"an image part", "POST", "/v1/conversations",
       R"({"items": [{"role": "user", "content": [{"type": "input_image"}]}]})", 400,
       "items[0].content[0].type"},
      {"metadata a list", "POST", "/v1/conversations", R"({"metadata": []})", 400, "metadata"},
      {"17 metadata keys", "POST", "/v1/conversations", json({{"metadata", big_meta}}).dump(), 400,
       "metadata"},
      {"a metadata value too long", "POST", "/v1/conversations",
       json({{"metadata", {{"k", std::string(513, 'x')}}}}).dump(), 400, "metadata.k"},
      {"update without metadata", "POST", c, "{}", 400, "metadata"},
      {"update metadata a number", "POST", c, R"({"metadata": {"a": 1}})", 400, "metadata.a"},
      {"add no items", "POST", c + "/items", R"({"items": []})", 400, "items"},
      {"add without items", "POST", c + "/items", "{}", 400, "items"},
      {"add 21 items", "POST", c + "/items", json({{"items", many}}).dump(), 400, "items"},
      {"list limit 0", "GET", c + "/items?limit=0", "", 400, "limit"},
      {"list limit 101", "GET", c + "/items?limit=101", "", 400, "limit"},
      {"list order sideways", "GET", c + "/items?order=up", "", 400, "order"},
      {"list after an unknown item", "GET", c + "/items?after=msg_nope", "", 404, "after"},
      {"unknown conversation", "GET", "/v1/conversations/conv_nope", "", 404, "conversation_id"},
      {"add to an unknown one", "POST", "/v1/conversations/conv_nope/items",
       json({{"items", {Message("user", "x")}}}).dump(), 404, "conversation_id"},
      {"delete an unknown one", "DELETE", "/v1/conversations/conv_nope", "", 404,
       "conversation_id"},
      {"an unknown item", "GET", c + "/items/msg_nope", "", 404, "item_id"},
      {"delete an unknown item", "DELETE", c + "/items/msg_nope", "", 404, "item_id"},
      {"list conversations", "GET", "/v1/conversations", "", 405, ""},
      {"put a conversation", "PUT", c, "{}", 405, ""},
      {"delete all items", "DELETE", c + "/items", "", 405, ""},
      {"post to an item", "POST", c + "/items/msg_1", "{}", 405, ""},
      {"an unknown sub-path", "GET", c + "/messages", "", 404, ""},
      {"too deep", "GET", c + "/items/a/b", "", 404, ""},
      {"an empty id", "GET", "/v1/conversations/", "", 404, ""},
      {"a reference without an id", "POST", c + "/items", R"({"items": [{"type":
       "item_reference"}]})",
       400, "items[0].id"},
      {"a reference to no item", "POST", c + "/items",
       R"({"items": [{"type": "item_reference", "id": "msg_nope"}]})", 404, "items[0].id"},
      {"a reference at create to no item", "POST", "/v1/conversations",
       R"({"items": [{"type": "item_reference", "id": "msg_nope"}]})", 404, "items[0].id"},
  };
  for (const Case& k : cases) {
    HttpResponse res = Call(k.method, k.target, k.body);
    EXPECT_EQ(res.status, k.status) << k.name << ": " << res.body;
    const json err = json::parse(res.body, nullptr, false);
    ASSERT_TRUE(err.is_object() && err.contains("error")) << k.name << ": " << res.body;
    EXPECT_FALSE(err["error"]["message"].get<std::string>().empty()) << k.name;
    if (*k.param != '\0') {
      EXPECT_EQ(err["error"]["param"], k.param) << k.name << ": " << res.body;
    }
    if (k.status == 405) {
      EXPECT_FALSE(res.header("Allow").empty()) << k.name;
    }
  }
  // Nothing was added, and another key's calls see nothing.
  EXPECT_EQ(CallJson("GET", c + "/items", nullptr)["data"].size(), 1u);
  EXPECT_EQ(Call("GET", c, "", "k2").status, 404);
  EXPECT_EQ(Call("DELETE", c, "", "k2").status, 404);
  EXPECT_EQ(store_->Count(), 1);
}

TEST_F(ConversationsApiTest, AnItemReferenceBecomesTheItemItNames) {
  // One of the owner's stored responses brought an answer item.
  StoredResponse r;
  r.id = "resp_1";
  r.owner = "k1";
  r.expires_at = clock_.UnixSeconds() + 3600;
  r.response = "{}";
  json answer = Message("assistant", "Paris.");
  answer["id"] = "msg_answer";
  r.items = {{"msg_answer", answer.dump()}};
  ASSERT_TRUE(responses_->Put(r, clock_.UnixSeconds()).ok());
  json ref = {{"type", "item_reference"}, {"id", "msg_answer"}};
  const json created = CallJson("POST", "/v1/conversations",
                                {{"items", {Message("user", "Capital of France?"), ref}}});
  const std::string c = "/v1/conversations/" + created["id"].get<std::string>();
  json items = CallJson("GET", c + "/items?order=asc", nullptr)["data"];
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[1]["role"], "assistant");
  EXPECT_EQ(items[1]["content"][0]["text"], "Paris.");
  EXPECT_EQ(items[1]["id"], "msg_answer");
  // The conversation's own first item, named again.
  const std::string first = items[0]["id"];
  const json added =
      CallJson("POST", c + "/items", {{"items", {{{"type", "item_reference"}, {"id", first}}}}});
  EXPECT_EQ(added["data"][0]["content"][0]["text"], "Capital of France?");
  EXPECT_EQ(CallJson("GET", c + "/items", nullptr)["data"].size(), 3u);
  // Another key's stored items are not found.
  HttpResponse other = Call("POST", "/v1/conversations", json({{"items", {ref}}}).dump(), "k2");
  EXPECT_EQ(other.status, 404) << other.body;
}

TEST_F(ConversationsApiTest, ItemsWaitForATurnInProgress) {
  const std::string id =
      CallJson("POST", "/v1/conversations", {{"items", {Message("user", "hi")}}})["id"];
  const std::string c = "/v1/conversations/" + id;
  const std::string first = CallJson("GET", c + "/items", nullptr)["data"][0]["id"];
  auto turn = store_->Hold("k1", id, clock_.UnixSeconds());  // a response being made in it
  ASSERT_TRUE(turn.ok());
  for (const auto& [method, target, body] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"POST", c + "/items", json({{"items", {Message("user", "x")}}}).dump()},
           {"DELETE", c + "/items/" + first, ""}}) {
    HttpResponse res = Call(method, target, body);
    EXPECT_EQ(res.status, 400) << method << " " << target;
    const json err = json::parse(res.body, nullptr, false);
    EXPECT_EQ(err["error"]["code"], "conversation_locked") << res.body;
    EXPECT_EQ(err["error"]["param"], "conversation_id") << res.body;
  }
  // Reads and metadata go on meanwhile; nothing changed.
  EXPECT_EQ(CallJson("GET", c + "/items", nullptr)["data"].size(), 1u);
  CallJson("POST", c, {{"metadata", {{"a", "b"}}}});
  // Once the turn is over, the same calls work.
  (*turn)->Release();
  CallJson("POST", c + "/items", {{"items", {Message("user", "x")}}});
  CallJson("DELETE", c + "/items/" + first, nullptr);
  EXPECT_EQ(CallJson("GET", c + "/items", nullptr)["data"].size(), 1u);
}

TEST_F(ConversationsApiTest, WithoutAStoreEveryPathSaysWhy) {
  HttpResponse res = Call("POST", "/v1/conversations", "{}", "k1", /*with_store=*/false);
  EXPECT_EQ(res.status, 404);
  EXPECT_NE(res.body.find("responses_retention: 0"), std::string::npos) << res.body;
  EXPECT_EQ(Call("GET", "/v1/conversations/conv_a", "", "k1", false).status, 404);
}

TEST(ConversationsPath, MatchesOnlyTheApi) {
  EXPECT_TRUE(IsConversationsPath("/v1/conversations"));
  EXPECT_TRUE(IsConversationsPath("/v1/conversations/conv_1/items"));
  EXPECT_FALSE(IsConversationsPath("/v1/conversationsx"));
  EXPECT_FALSE(IsConversationsPath("/v1/responses"));
}

}  // namespace
}  // namespace outpost::api

#include "outpost/api/json_fields.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace outpost::api {
namespace {

using nlohmann::json;

TEST(ParseObjectBody, AnObjectComesBackWhole) {
  auto body = ParseObjectBody(R"({"model": "m", "n": [1, {"x": null}]})");
  ASSERT_TRUE(body.ok()) << body.status().message();
  EXPECT_EQ(*body, json::parse(R"({"model": "m", "n": [1, {"x": null}]})"));
}

TEST(ParseObjectBody, EveryBadBodyIsNamedAsWhatItIs) {
  const std::string deep = std::string(200, '[') + std::string(200, ']');
  struct Case {
    std::string body, what, message;
  } cases[] = {
      {"", "the request body", "the request body is not valid JSON"},
      {"{not json", "the request body", "the request body is not valid JSON"},
      {R"({"a": 1} trailing)", "the request body", "the request body is not valid JSON"},
      {"[]", "the request body", "the request body must be a JSON object"},
      {"\"text\"", "the request body", "the request body must be a JSON object"},
      {"null", "the request body", "the request body must be a JSON object"},
      {"7", "the body", "the body must be a JSON object"},
      {"{nope", "the body", "the body is not valid JSON"},
      {R"({"a": )" + deep + "}", "the request body",
       "the request body nests arrays and objects more than 128 levels deep"},
  };
  for (const Case& c : cases) {
    auto body = ParseObjectBody(c.body, c.what);
    ASSERT_FALSE(body.ok()) << c.body;
    EXPECT_EQ(body.status().code(), StatusCode::kInvalidArgument) << c.body;
    EXPECT_NE(body.status().message().find(c.message), std::string::npos)
        << c.body << " -> " << body.status().message();
  }
}

TEST(CheckMetadata, OpenAIsLimitsNameTheKey) {
  EXPECT_TRUE(CheckMetadata(json()).ok());
  EXPECT_TRUE(CheckMetadata(json{{"team", "line-3"}}).ok());
  json seventeen = json::object();
  for (int i = 0; i < 17; ++i) seventeen["k" + std::to_string(i)] = "v";
  struct Case {
    json m;
    std::string param, message;
  } cases[] = {
      {json::array(), "metadata", "an object of strings"},
      {seventeen, "metadata", "at most 16 keys, got 17"},
      {json{{std::string(65, 'k'), "v"}}, "metadata", "at most 64 characters, got 65"},
      {json{{"a", 1}}, "metadata.a", "got a number"},
      {json{{"a", std::string(513, 'v')}}, "metadata.a", "at most 512 characters, got 513"},
  };
  for (const Case& c : cases) {
    const Status st = CheckMetadata(c.m);
    ASSERT_FALSE(st.ok()) << c.m.dump().substr(0, 80);
    EXPECT_EQ(st.param(), c.param);
    EXPECT_NE(st.message().find(c.message), std::string::npos) << st.message();
  }
}

TEST(ItemPage, PagesNewestFirstByDefaultAndAfterAnId) {
  const json items = json::parse(R"([{"id": "a"}, {"id": "b"}, {"id": "c"}])");
  auto page = ItemPage(items, "limit=2", "conv");
  ASSERT_TRUE(page.ok());
  EXPECT_EQ((*page)["first_id"], "c");
  EXPECT_EQ((*page)["last_id"], "b");
  EXPECT_TRUE((*page)["has_more"].get<bool>());
  page = ItemPage(items, "order=asc&after=a", "conv");
  ASSERT_TRUE(page.ok());
  EXPECT_EQ((*page)["data"].size(), 2u);
  EXPECT_EQ((*page)["first_id"], "b");
  EXPECT_FALSE((*page)["has_more"].get<bool>());

  auto bad = ItemPage(items, "order=sideways", "conv");
  EXPECT_EQ(bad.status().param(), "order");
  bad = ItemPage(items, "after=zz", "conv");
  EXPECT_EQ(bad.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(bad.status().param(), "after");
  bad = ItemPage(items, "limit=101", "conv");
  EXPECT_EQ(bad.status().param(), "limit");
}

}  // namespace
}  // namespace outpost::api

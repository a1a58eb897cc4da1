#include "outpost/util/json_text.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

namespace outpost::util {
namespace {

TEST(CloseJsonPrefix, WholeJsonIsKeptAsItIs) {
  for (const std::string t : {R"({"city": "Paris"})", "[]", "42", R"("s")", " {} "}) {
    EXPECT_EQ(CloseJsonPrefix(t), t);
  }
}

TEST(CloseJsonPrefix, ACutTextIsClosedBackToWhatWasWhole) {
  const struct {
    const char* cut;
    const char* closed;
  } kCases[] = {
      {"{", "{}"},
      {R"({"ci)", "{}"},                           // inside the first key
      {R"({"city")", "{}"},                        // a key with no value
      {R"({"city":)", "{}"},                       // after the colon
      {R"({"city": "Par)", R"({"city": "Par"})"},  // inside a string value
      {R"({"city": "Paris")", R"({"city": "Paris"})"},
      {R"({"city": "Paris",)", R"({"city": "Paris"})"},
      {R"({"city": "Paris", "un)", R"({"city": "Paris"})"},
      {R"({"city": "Paris", "unit": tr)", R"({"city": "Paris"})"},  // inside a literal
      {R"({"n": 12)", R"({"n": 12})"},
      {R"({"a": [1, 2)", R"({"a": [1, 2]})"},
      {R"({"a": [1, {"b": )", R"({"a": [1, {}]})"},
      {R"({"a": {"b": [true, null)", R"({"a": {"b": [true, null]}})"},
      {R"({"q": "say \"hi\)", R"({"q": "say \"hi"})"},   // a cut escape is dropped
      {R"({"q": "caf\u00)", R"({"q": "caf"})"},          // half a \u escape too
      {R"({"q": "caf\u00e9)", R"({"q": "caf\u00e9"})"},  // a whole one stays
      {R"({"q": "a,b{c)", R"({"q": "a,b{c"})"},          // brackets in strings are text
      {R"({"city": "Paris"} trailing)", R"({"city": "Paris"})"},
  };
  for (const auto& c : kCases) {
    const auto closed = CloseJsonPrefix(c.cut);
    ASSERT_TRUE(closed.has_value()) << c.cut;
    EXPECT_EQ(*closed, c.closed) << c.cut;
    EXPECT_TRUE(nlohmann::json::accept(*closed)) << *closed;
  }
}

TEST(CloseJsonPrefix, TextThatDoesNotStartAsJsonHasNoClosing) {
  for (const std::string t :
       {"", "  ", "hello", "get_weather(city=Paris)", "}", R"({"a": 1}})", R"({"a": [1}})"}) {
    EXPECT_EQ(CloseJsonPrefix(t), std::nullopt) << t;
  }
}

TEST(CloseJsonPrefix, WorkStaysLinearOnAHostileText) {
  // 1 MiB of brackets and commas: a version that kept every cut with its
  // open brackets took minutes and gigabytes here.
  const std::string deep(1 << 20, '[');
  const auto closed = CloseJsonPrefix(deep);
  ASSERT_TRUE(closed.has_value());
  EXPECT_EQ(closed->size(), 2u << 20);
  std::string commas = "[";
  commas.append(1 << 20, ',');
  EXPECT_EQ(CloseJsonPrefix(commas), std::nullopt);
}

TEST(JsonDepth, CountsArraysAndObjectsNotWhatStringsHold) {
  EXPECT_EQ(JsonDepth("42"), 0);
  EXPECT_EQ(JsonDepth("{}"), 1);
  EXPECT_EQ(JsonDepth(R"({"a": [1, {"b": []}], "c": {}})"), 4);
  EXPECT_EQ(JsonDepth(R"("[[[{{{")"), 0);
  EXPECT_EQ(JsonDepth(R"({"a": "\"[[[", "b": "\\"})"), 1);  // escaped quotes and backslashes
  EXPECT_EQ(JsonDepth("[[["), 3);                           // the start of a text counts too
  // Counting stops past the limit: a megabyte of brackets is one short pass.
  EXPECT_EQ(JsonDepth(std::string(1 << 20, '['), 5), 6);
}

TEST(JsonDepth, TheLimitIsRefusedNamingWhatNestsTooDeep) {
  const auto nested = [](int levels) {
    return std::string(static_cast<size_t>(levels), '[') +
           std::string(static_cast<size_t>(levels), ']');
  };
  EXPECT_TRUE(CheckJsonDepth(nested(kMaxJsonDepth), "the request body").ok());
  const Status st = CheckJsonDepth(nested(kMaxJsonDepth + 1), "the request body", "p");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "the request body nests arrays and objects more than 128 levels deep");
  EXPECT_EQ(st.param(), "p");
}

}  // namespace
}  // namespace outpost::util

namespace outpost::util {
namespace {

TEST(JsonMemberText, FindsATopLevelMembersValueAsWritten) {
  const std::string body = R"({"model": "m", "tools": [{"a": {"b": "}:,"}}, 2], "x": {"tools": 1},)"
                           R"( "s": "\"tools\":", "n": 5})";
  EXPECT_EQ(JsonMemberText(body, "tools"), R"( [{"a": {"b": "}:,"}}, 2])");
  EXPECT_EQ(JsonMemberText(body, "n"), " 5");
  EXPECT_EQ(JsonMemberText(body, "model"), R"( "m")");
  EXPECT_EQ(JsonMemberText(body, "b"), std::nullopt);  // not at the top level
  EXPECT_EQ(JsonMemberText(body, "absent"), std::nullopt);
  // The last of a repeated member, as nlohmann's parser keeps it.
  EXPECT_EQ(JsonMemberText(R"({"a": 1, "a": {"z": 2}})", "a"), R"( {"z": 2})");
}

TEST(CountJsonMembers, CountsMembersInAllAndInTheLargestObject) {
  const JsonMembers m =
      CountJsonMembers(R"({"a": {"b": 1, "c": [{"d": 2}, ":"], "e": 3}, "f": 4})");
  EXPECT_EQ(m.total, 6u);
  EXPECT_EQ(m.most_in_one, 3u);  // b, c, e
  EXPECT_EQ(CountJsonMembers("[1, \"a:b\"]").total, 0u);
}

TEST(SchemaAlternatives, CountsEnumValuesAndBranchesAllThroughTheSchema) {
  EXPECT_EQ(SchemaAlternatives(R"({"type":"string"})"), 0u);
  EXPECT_EQ(SchemaAlternatives(R"({"enum":["a","b","c"]})"), 3u);
  EXPECT_EQ(
      SchemaAlternatives(
          R"({"type":"object","properties":{"a":{"enum":[1,2]},"b":{"anyOf":[{"const":1},)"
          R"({"oneOf":[{"enum":["x"]},{"type":"null"}]}]}},"$defs":{"d":{"enum":[true,false]}}})"),
      2u + 2u + 2u + 1u + 2u);
  // A property named "enum" is a schema, not a list of values.
  EXPECT_EQ(SchemaAlternatives(R"({"properties":{"enum":{"type":"string"}}})"), 0u);
  EXPECT_EQ(SchemaAlternatives("not json"), 0u);
}

}  // namespace
}  // namespace outpost::util

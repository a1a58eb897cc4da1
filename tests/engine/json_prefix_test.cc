#include "outpost/engine/json_prefix.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

namespace outpost::engine {
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

}  // namespace
}  // namespace outpost::engine

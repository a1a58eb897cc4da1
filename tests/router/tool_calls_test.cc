// The generic tool-call format: prompt turns, answer schema, answer parsing.
#include "outpost/router/tool_calls.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace outpost::router {
namespace {

ToolSpec Weather(ToolChoice::Mode mode = ToolChoice::Mode::kAuto, bool parallel = true) {
  ToolSpec t;
  t.functions = {{"get_weather", "Weather for a city",
                  R"({"type":"object","properties":{"city":{"type":"string"}}})"},
                 {"get_time", "", ""}};
  t.choice.mode = mode;
  t.parallel = parallel;
  return t;
}

TEST(ToolCalls, SchemaAllowsTextOnlyForAuto) {
  const auto automatic = nlohmann::json::parse(ToolAnswerSchema(Weather()));
  ASSERT_TRUE(automatic.contains("anyOf"));
  EXPECT_EQ(automatic["anyOf"][1]["required"][0], "response");
  const auto required =
      nlohmann::json::parse(ToolAnswerSchema(Weather(ToolChoice::Mode::kRequired)));
  EXPECT_FALSE(required.contains("anyOf"));
  EXPECT_EQ(required["properties"]["tool_calls"]["minItems"], 1);
  EXPECT_EQ(required["properties"]["tool_calls"]["items"]["anyOf"].size(), 2u);
  const auto single =
      nlohmann::json::parse(ToolAnswerSchema(Weather(ToolChoice::Mode::kRequired, false)));
  EXPECT_EQ(single["properties"]["tool_calls"]["maxItems"], 1);
  ToolSpec named = Weather(ToolChoice::Mode::kFunction);
  named.choice.function = "get_time";
  const auto one = nlohmann::json::parse(ToolAnswerSchema(named));
  EXPECT_EQ(one["properties"]["tool_calls"]["items"]["properties"]["name"]["const"], "get_time");
}

TEST(ToolCalls, MessagesDescribeToolsAndRenderEarlierTurns) {
  std::vector<engine::ChatMessage> in = {{"system", "Be brief."}, {"user", "Weather in Oslo?"}};
  engine::ChatMessage call("assistant", "");
  call.tool_calls =
      R"([{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}])";
  in.push_back(call);
  engine::ChatMessage result("tool", "Rain");
  result.tool_call_id = "c1";
  in.push_back(result);
  const auto out = ToolMessages(in, Weather());
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].role, "system");
  EXPECT_EQ(out[0].content.rfind("Be brief.\n\n", 0), 0u);
  EXPECT_NE(out[0].content.find("get_weather: Weather for a city"), std::string::npos);
  EXPECT_EQ(out[2].content,
            R"({"tool_calls":[{"arguments":{"city":"Oslo"},"name":"get_weather"}]})");
  EXPECT_EQ(out[3].role, "user");
  EXPECT_EQ(out[3].content, "Result of function call c1: Rain");
}

TEST(ToolCalls, ParsesCallsTextAndRefusesCutAnswers) {
  auto calls =
      ParseToolAnswer(R"({"tool_calls":[{"name":"get_time","arguments":{"city":"Rome"}}]})");
  ASSERT_TRUE(calls.ok());
  ASSERT_EQ(calls->tool_calls.size(), 1u);
  EXPECT_EQ(calls->tool_calls[0].name, "get_time");
  EXPECT_EQ(calls->tool_calls[0].arguments, R"({"city":"Rome"})");
  auto text = ParseToolAnswer(R"({"response":"It rains."})");
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->content, "It rains.");
  EXPECT_TRUE(text->tool_calls.empty());
  EXPECT_FALSE(ParseToolAnswer(R"({"tool_calls":[{"name":"get_ti)").ok());
}

}  // namespace
}  // namespace outpost::router

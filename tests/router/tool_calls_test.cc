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
            R"({"tool_calls":[{"name":"get_weather","arguments":{"city":"Oslo"}}]})");
  EXPECT_EQ(out[3].role, "user");
  EXPECT_EQ(out[3].content, "Result of function call c1: Rain");
}

TEST(ToolCalls, ACutCallSentBackIsRenderedWithItsArgumentsClosed) {
  // As Outpost answered it when max_tokens cut it; then not JSON at all; then
  // an object rather than a string.
  const struct {
    const char* arguments;
    const char* rendered;
  } kRows[] = {
      {R"("{\"city\": \"Os")", R"({"city":"Os"})"},
      {R"("{\"city\": \"Oslo\", \"un")", R"({"city":"Oslo"})"},
      {R"("city=Oslo")", "{}"},
      {R"({"city":"Oslo"})", R"({"city":"Oslo"})"},
  };
  for (const auto& row : kRows) {
    engine::ChatMessage call("assistant", "");
    call.tool_calls =
        std::string(
            R"([{"id":"c1","type":"function","function":{"name":"get_weather","arguments":)") +
        row.arguments + "}}]";
    const auto out = ToolMessages({{"user", "Weather in Oslo?"}, call}, Weather());
    ASSERT_EQ(out.size(), 3u);
    EXPECT_EQ(out[2].content, std::string(R"({"tool_calls":[{"name":"get_weather","arguments":)") +
                                  row.rendered + "}]}")
        << row.arguments;
  }
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

// Every prefix of an answer, as a stream sees it: what is reported only grows
// and ends equal to the whole answer's parse.
TEST(ToolCalls, PartialAnswersOnlyGrow) {
  const std::string calls =
      R"({"tool_calls": [{"name": "get_weather", "arguments": {"city": "Par\"is", "days": [1, 2]}},)"
      R"( {"name": "get_time", "arguments": {}}]})";
  const std::string text = R"({"response": "It is \u00e9t\u00e9 \"hot\"\nand sunny."})";
  for (const std::string& answer : {calls, text}) {
    engine::ParsedAnswer last;
    for (size_t n = 0; n <= answer.size(); ++n) {
      auto a = ParsePartialToolAnswer(answer.substr(0, n));
      ASSERT_TRUE(a.ok()) << answer.substr(0, n);
      EXPECT_EQ(a->content.compare(0, last.content.size(), last.content), 0)
          << "'" << last.content << "' then '" << a->content << "'";
      ASSERT_GE(a->tool_calls.size(), last.tool_calls.size()) << answer.substr(0, n);
      for (size_t i = 0; i < last.tool_calls.size(); ++i) {
        EXPECT_EQ(a->tool_calls[i].name, last.tool_calls[i].name);
        const std::string& was = last.tool_calls[i].arguments;
        EXPECT_EQ(a->tool_calls[i].arguments.compare(0, was.size(), was), 0) << answer.substr(0, n);
      }
      last = *a;
    }
    auto whole = ParseToolAnswer(answer);
    ASSERT_TRUE(whole.ok());
    EXPECT_EQ(last.content, whole->content);
    ASSERT_EQ(last.tool_calls.size(), whole->tool_calls.size());
    for (size_t i = 0; i < last.tool_calls.size(); ++i) {
      EXPECT_EQ(last.tool_calls[i].arguments, whole->tool_calls[i].arguments);
    }
  }
  auto w = ParseToolAnswer(calls);
  ASSERT_EQ(w->tool_calls.size(), 2u);
  EXPECT_EQ(w->tool_calls[0].name, "get_weather");
  EXPECT_EQ(nlohmann::json::parse(w->tool_calls[0].arguments)["city"], "Par\"is");
  EXPECT_EQ(w->tool_calls[1].arguments, "{}");
  EXPECT_EQ(ParseToolAnswer(text)->content, "It is \u00e9t\u00e9 \"hot\"\nand sunny.");
  // Off the format: an error, not a silent empty answer.
  EXPECT_FALSE(ParsePartialToolAnswer(R"({"weather": )").ok());
  EXPECT_FALSE(ParsePartialToolAnswer(R"([1, )").ok());
}

// tools with a response_format: a direct answer is {"response": <value>}
// following the format's schema, described to the model, and its content is
// the value's JSON text as written, growing while it streams.
TEST(ToolCalls, ADirectAnswerCanFollowAResponseFormat) {
  const std::string defect =
      R"({"type":"object","properties":{"part":{"type":"string"}},"required":["part"]})";
  const auto schema = nlohmann::ordered_json::parse(ToolAnswerSchema(Weather(), defect));
  EXPECT_EQ(schema["anyOf"][1]["properties"]["response"], nlohmann::ordered_json::parse(defect));
  EXPECT_EQ(schema["anyOf"][0]["required"][0], "tool_calls");
  // Required: calls only, the format has nothing to shape.
  EXPECT_FALSE(nlohmann::json::parse(ToolAnswerSchema(Weather(ToolChoice::Mode::kRequired), defect))
                   .contains("anyOf"));
  const auto turns = ToolMessages({{"user", "A scratch."}}, Weather(), defect);
  EXPECT_NE(turns[0].content.find("following this schema: " + defect), std::string::npos)
      << turns[0].content;

  const std::string answer = R"({"response": {"part": "door \"left\"", "n": [1, 2]}})";
  const std::string value = R"({"part": "door \"left\"", "n": [1, 2]})";
  auto whole = ParseToolAnswer(answer, /*json_response=*/true);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_EQ(whole->content, value);
  EXPECT_TRUE(whole->tool_calls.empty());
  std::string last;
  for (size_t n = 0; n <= answer.size(); ++n) {
    auto a = ParsePartialToolAnswer(answer.substr(0, n), /*json_response=*/true);
    ASSERT_TRUE(a.ok()) << answer.substr(0, n);
    EXPECT_EQ(a->content.compare(0, last.size(), last), 0) << last << " then " << a->content;
    last = a->content;
  }
  EXPECT_EQ(last, value);
  // A scalar schema: the value ends at the closing brace.
  auto scalar = ParseToolAnswer(R"({"response":42})", /*json_response=*/true);
  ASSERT_TRUE(scalar.ok()) << scalar.status().ToString();
  EXPECT_EQ(scalar->content, "42");
  auto quoted = ParseToolAnswer(R"({"response": "hi"})", /*json_response=*/true);
  ASSERT_TRUE(quoted.ok());
  EXPECT_EQ(quoted->content, R"("hi")");  // JSON text, as response_format answers are
  // Calls parse as before.
  auto call = ParseToolAnswer(R"({"tool_calls":[{"name":"get_time","arguments":{}}]})", true);
  ASSERT_TRUE(call.ok());
  ASSERT_EQ(call->tool_calls.size(), 1u);
  EXPECT_EQ(call->content, "");
}

// A toy thinking template: "<t>" thinking "</t>", then the answer.
class ToyThinking : public engine::AnswerParser {
 public:
  StatusOr<engine::ParsedAnswer> Parse(const std::string& text, bool partial) const override {
    engine::ParsedAnswer a;
    const size_t end = text.find("</t>");
    if (text.rfind("<t>", 0) != 0) {
      a.content = text;
    } else if (end == std::string::npos) {
      a.reasoning = text.substr(3);
    } else {
      a.reasoning = text.substr(3, end - 3);
      a.content = text.substr(end + 4);
    }
    return a;
  }
};

TEST(ToolCalls, AThinkingTemplatesThinkingIsSplitOffBeforeTheFormatIsRead) {
  auto parser = GenericToolParser(false, std::make_shared<ToyThinking>());
  const std::string answer =
      R"(<t>The user wants the weather.</t>{"tool_calls": [{"name": "get_weather", )"
      R"("arguments": {"city": "Paris"}}]})";
  auto whole = parser->Parse(answer, false);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_EQ(whole->reasoning, "The user wants the weather.");
  ASSERT_EQ(whole->tool_calls.size(), 1u);
  EXPECT_EQ(whole->tool_calls[0].name, "get_weather");
  // Streamed: while it thinks, only thinking; the call once its name is whole.
  auto thinking = parser->Parse("<t>The user", true);
  ASSERT_TRUE(thinking.ok());
  EXPECT_EQ(thinking->reasoning, "The user");
  EXPECT_TRUE(thinking->content.empty() && thinking->tool_calls.empty());
  auto calling = parser->Parse(answer.substr(0, answer.find("Paris")), true);
  ASSERT_TRUE(calling.ok()) << calling.status().ToString();
  EXPECT_EQ(calling->reasoning, "The user wants the weather.");
  ASSERT_EQ(calling->tool_calls.size(), 1u);
  EXPECT_EQ(calling->tool_calls[0].name, "get_weather");
  // Without thinking, the format alone.
  auto plain = parser->Parse(R"({"response": "Hello."})", false);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->reasoning, "");
  EXPECT_EQ(plain->content, "Hello.");
  // Not the format after the thinking: an error, as without it.
  EXPECT_FALSE(parser->Parse("<t>Hmm.</t>Just text.", false).ok());
}

}  // namespace
}  // namespace outpost::router

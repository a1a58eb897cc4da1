// Tool calling in a template's own format, through llama.cpp's chat code: for
// templates that declare tools (Qwen 2.5, Hermes 3, Llama 3.2, Mistral Nemo,
// copied from the pinned llama.cpp's models/templates) the tools appear in
// the prompt, the calls get a grammar, and the parser reads a call written in
// that family's format back into a name and JSON arguments, whole and while it
// streams. Templates without tools (SmolLM2's own, Gemma's) are not native.
#include <gtest/gtest.h>

#include "engine/grammar_matcher.h"
#include "engine/template_model.h"
#include "mocks/test_model.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "outpost/engine/model.h"

namespace outpost::engine {
namespace {

using ::outpost::engine::testing::LoadWith;

ChatTools Weather(bool required) {
  ChatTools t;
  t.functions.push_back(
      {"get_weather", "Current weather for a city.",
       R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})"});
  t.required = required;
  return t;
}

struct Family {
  const char* name;
  const char* template_file;
  const char* call;  // get_weather(city=Paris) as this family writes it
  // tool_choice auto gets a lazy grammar. Llama 3.x's call is bare JSON with
  // no opening marker to trigger on, so llama.cpp leaves it unconstrained
  // (and still parses it).
  bool auto_grammar;
  const char* opening;  // what opens a call ("" = nothing: bare JSON)
};

void PrintTo(const Family& f, std::ostream* os) {
  *os << f.name;
}

class ToolFormats : public ::testing::TestWithParam<Family> {};

TEST_P(ToolFormats, RendersToolsConstrainsAndParsesCalls) {
  OUTPOST_TEST_MODEL(model);
  InstallLlamaLogger(false);
  auto m = LoadWith(model, GetParam().template_file);
  ASSERT_NE(m, nullptr);
  ASSERT_TRUE(m->NativeToolCalls());

  const ChatTools tools = Weather(/*required=*/false);
  auto p = m->ApplyChatTemplate({{"user", "Weather in Paris?"}}, &tools);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_NE(p->text.find("get_weather"), std::string::npos) << p->text;
  EXPECT_NE(p->text.find("Current weather for a city."), std::string::npos) << p->text;
  if (GetParam().auto_grammar) {
    EXPECT_FALSE(p->grammar.empty());
    EXPECT_TRUE(p->grammar_lazy);  // auto: free text until a call opens
    EXPECT_FALSE(p->grammar_triggers.empty());
  } else {
    EXPECT_TRUE(p->grammar.empty());
  }
  ASSERT_NE(p->parser, nullptr);

  const std::string call = GetParam().call;
  auto whole = p->parser->Parse(call, /*partial=*/false);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  ASSERT_EQ(whole->tool_calls.size(), 1u) << call;
  EXPECT_EQ(whole->tool_calls[0].name, "get_weather");
  EXPECT_EQ(nlohmann::json::parse(whole->tool_calls[0].arguments),
            nlohmann::json::parse(R"({"city":"Paris"})"));
  EXPECT_EQ(whole->content, "");

  // While it streams, what the parser reports only grows.
  std::string last_args;
  size_t calls_seen = 0;
  for (size_t n = 1; n <= call.size(); ++n) {
    auto part = p->parser->Parse(call.substr(0, n), /*partial=*/true);
    ASSERT_TRUE(part.ok()) << call.substr(0, n) << ": " << part.status().ToString();
    ASSERT_GE(part->tool_calls.size(), calls_seen) << call.substr(0, n);
    calls_seen = part->tool_calls.size();
    if (calls_seen == 1) {
      const std::string& args = part->tool_calls[0].arguments;
      EXPECT_EQ(args.compare(0, last_args.size(), last_args), 0)
          << "'" << last_args << "' then '" << args << "'";
      last_args = args;
    }
  }
  EXPECT_EQ(calls_seen, 1u);

  // Plain text is content, with no calls.
  auto text = p->parser->Parse("It is sunny.", /*partial=*/false);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(text->content, "It is sunny.");
  EXPECT_TRUE(text->tool_calls.empty());

  // required: the grammar holds from the first token, and where the format
  // opens calls with a marker the prompt already ends with it, so the answer
  // is the call itself (parsed back with the marker).
  const ChatTools must = Weather(/*required=*/true);
  auto r = m->ApplyChatTemplate({{"user", "Weather in Paris?"}}, &must);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->grammar.empty());
  EXPECT_FALSE(r->grammar_lazy);
  const std::string opening = GetParam().opening;
  if (!opening.empty()) {
    ASSERT_GE(r->text.size(), opening.size());
    EXPECT_EQ(r->text.substr(r->text.size() - opening.size()), opening);
    ASSERT_TRUE(call.rfind(opening, 0) == 0);
    auto rest = r->parser->Parse(call.substr(opening.size()), /*partial=*/false);
    ASSERT_TRUE(rest.ok()) << rest.status().ToString();
    ASSERT_EQ(rest->tool_calls.size(), 1u);
    EXPECT_EQ(rest->tool_calls[0].name, "get_weather");
  }
}

// parallel_tool_calls false: the answer ends where its one call is whole,
// not a character before (a lenient parse reads a cut call as whole), and
// never while a plain-text answer goes on. With parallel calls it never
// ends early: the model may write another.
TEST_P(ToolFormats, WithoutParallelCallsTheAnswerEndsWhereTheCallIsWhole) {
  OUTPOST_TEST_MODEL(model);
  InstallLlamaLogger(false);
  auto m = LoadWith(model, GetParam().template_file);
  ASSERT_NE(m, nullptr);
  const std::string call = GetParam().call;
  for (bool required : {false, true}) {
    ChatTools one = Weather(required);
    one.parallel = false;
    auto p = m->ApplyChatTemplate({{"user", "Weather in Paris?"}}, &one);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    ASSERT_NE(p->parser, nullptr);
    EXPECT_TRUE(p->parser->OneCall());
    // required: the prompt already holds the opening marker.
    const std::string opening = GetParam().opening;
    const bool forced = required && !opening.empty();
    const std::string answer = forced ? call.substr(opening.size()) : call;
    for (size_t n = 1; n < answer.size(); ++n) {
      EXPECT_FALSE(p->parser->Ended(answer.substr(0, n)))
          << required << ": " << answer.substr(0, n);
    }
    EXPECT_TRUE(p->parser->Ended(answer)) << required << ": " << answer;
    if (!required) {
      EXPECT_FALSE(p->parser->Ended("It is sunny."));
    }

    ChatTools many = Weather(required);
    auto q = m->ApplyChatTemplate({{"user", "Weather in Paris?"}}, &many);
    ASSERT_TRUE(q.ok()) << q.status().ToString();
    EXPECT_FALSE(q->parser->OneCall());
    EXPECT_FALSE(q->parser->Ended(answer));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Families, ToolFormats,
    ::testing::Values(
        Family{"qwen25", "qwen2.5-tools.jinja",
               "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
               "\"Paris\"}}\n</tool_call>",
               true, "<tool_call>\n"},
        Family{"hermes3", "hermes3-tools.jinja",
               "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
               "\"Paris\"}}\n</tool_call>",
               true, "<tool_call>\n"},
        Family{"llama32", "llama3.2-tools.jinja",
               "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}", false, ""},
        Family{"mistral_nemo", "mistral-nemo-tools.jinja",
               "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, "
               "\"id\": \"abcDEF123\"}]",
               true, "[TOOL_CALLS]"}),
    [](const ::testing::TestParamInfo<Family>& i) { return std::string(i.param.name); });

// A history with a call and its result renders in the template's own shape.
TEST(ToolFormats, RendersCallAndResultTurns) {
  OUTPOST_TEST_MODEL(model);
  auto m = LoadWith(model, "qwen2.5-tools.jinja");
  ASSERT_NE(m, nullptr);
  std::vector<ChatMessage> msgs = {
      {"user", "Weather in Paris?"}, {"assistant", ""}, {"tool", "18C"}};
  msgs[1].tool_calls =
      R"([{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}])";
  msgs[2].tool_call_id = "call_1";
  const ChatTools tools = Weather(false);
  auto p = m->ApplyChatTemplate(msgs, &tools);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_NE(p->text.find("<tool_call>\n{\"name\": \"get_weather\""), std::string::npos) << p->text;
  EXPECT_NE(p->text.find("<tool_response>\n18C\n</tool_response>"), std::string::npos) << p->text;
}

// parallel_tool_calls false: Qwen's grammar still repeats the call section,
// so the parser keeps the first call only.
TEST(ToolFormats, OneCallWithoutParallelCalls) {
  OUTPOST_TEST_MODEL(model);
  auto m = LoadWith(model, "qwen2.5-tools.jinja");
  ASSERT_NE(m, nullptr);
  const std::string two =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\"}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call>";
  for (bool parallel : {true, false}) {
    ChatTools t = Weather(false);
    t.parallel = parallel;
    auto p = m->ApplyChatTemplate({{"user", "Weather in Paris and Rome?"}}, &t);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    auto a = p->parser->Parse(two, /*partial=*/false);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    EXPECT_EQ(a->tool_calls.size(), parallel ? 2u : 1u);
    EXPECT_NE(a->tool_calls[0].arguments.find("Paris"), std::string::npos);
  }
}

// A number's bounds and a pattern's \\d, which llama.cpp's converter would
// drop, hold in a template's own call format too: the grammar is built from
// the readied parameters, while the prompt shows them as the client gave them.
TEST(ToolFormats, ParameterBoundsAndPatternsHoldInATemplatesOwnFormat) {
  OUTPOST_TEST_MODEL(model);
  auto m = LoadWith(model, "qwen2.5-tools.jinja");
  ASSERT_NE(m, nullptr);
  ChatTools t;
  t.functions.push_back(
      {"get_forecast", "Forecast for a city.",
       R"({"type":"object","properties":{"city":{"type":"string","pattern":"^[A-Z]\\w+$"},)"
       R"("days":{"type":"number","minimum":1,"maximum":7}},"required":["city","days"]})"});
  t.required = true;
  t.parallel = false;
  auto p = m->ApplyChatTemplate({{"user", "Forecast for Paris?"}}, &t);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_NE(p->text.find("\"maximum\": 7"), std::string::npos) << p->text;
  EXPECT_EQ(p->text.find("__outpost"), std::string::npos) << p->text;
  EXPECT_NE(p->grammar.find("outpost-number-0 ::= "), std::string::npos) << p->grammar;
  EXPECT_EQ(p->grammar.find("__outpost"), std::string::npos) << p->grammar;
  testing::Matcher matches(p->grammar);
  auto call = [&](const std::string& city, const std::string& days) {
    return p->grammar_prefix + "{\"name\": \"get_forecast\", \"arguments\": {\"city\": \"" + city +
           "\", \"days\": " + days + "}}\n</tool_call>";
  };
  EXPECT_TRUE(matches(call("Paris", "2.5"))) << call("Paris", "2.5") << "\n" << p->grammar;
  EXPECT_TRUE(matches(call("Paris", "7")));
  EXPECT_FALSE(matches(call("Paris", "9")));
  EXPECT_FALSE(matches(call("Paris", "0.5")));
  EXPECT_FALSE(matches(call("Paris", "3e0")));
  EXPECT_FALSE(matches(call("paris", "3")));  // the pattern's [A-Z]
  EXPECT_FALSE(matches(call("P-ris", "3")));  // \w
}

// Templates that know nothing of tools use the router's generic format.
TEST(ToolFormats, TemplatesWithoutToolsAreNotNative) {
  OUTPOST_TEST_MODEL(model);
  auto smol = LoadWith(model, "");
  ASSERT_NE(smol, nullptr);
  EXPECT_FALSE(smol->NativeToolCalls());
  auto chatml = LoadWith(model, "chatml.jinja");
  ASSERT_NE(chatml, nullptr);
  EXPECT_FALSE(chatml->NativeToolCalls());
}

}  // namespace
}  // namespace outpost::engine

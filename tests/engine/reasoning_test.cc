// Models that think before they answer, through llama.cpp's chat code: for
// templates with a thinking block (Qwen 3, DeepSeek R1, SmolLM3, gpt-oss;
// copied from the pinned llama.cpp's models/templates) the prompt says
// whether to think, the block's tags are known, and the parser splits the
// thinking off the answer, whole and while it streams. Rendered with the
// default model's vocabulary. Also the grammar that lets a response_format
// answer think first (thinking_grammar.h), in llama.cpp's grammar engine.
#include <gtest/gtest.h>

#include "engine/grammar_matcher.h"
#include "engine/template_model.h"
#include "mocks/test_model.h"

#include <string>
#include <vector>

#include "outpost/engine/grammar_limits.h"
#include "outpost/engine/json_schema_grammar.h"
#include "outpost/engine/model.h"
#include "outpost/engine/thinking_grammar.h"

namespace outpost::engine {
namespace {

using ::outpost::engine::testing::EndsWith;
using ::outpost::engine::testing::ExpectStreamedPartsGrow;
using ::outpost::engine::testing::LoadWith;

using ::outpost::engine::testing::Matcher;

struct Family {
  const char* name;
  const char* template_file;
  bool opened;         // the prompt opens the block: the answer starts inside it
  const char* answer;  // "I add.\n" as thinking, then "It is 4." as this family writes it
  const char* disabled_prompt_tail;  // the prompt's end with enable_thinking false
};

void PrintTo(const Family& f, std::ostream* os) {
  *os << f.name;
}

class Thinking : public ::testing::TestWithParam<Family> {};

TEST_P(Thinking, KnowsTheBlockAndSplitsTheAnswerWholeAndStreamed) {
  OUTPOST_TEST_MODEL(model);
  InstallLlamaLogger(false);
  const Family& f = GetParam();
  auto m = LoadWith(model, f.template_file);
  ASSERT_NE(m, nullptr);
  auto p = m->ApplyChatTemplate({{"user", "What is 2 + 2?"}}, nullptr, ChatOptions());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->thinking.start, "<think>");
  EXPECT_EQ(p->thinking.end, "</think>");
  EXPECT_EQ(p->thinking.open, f.opened);
  ASSERT_NE(p->parser, nullptr);

  const std::string answer = f.answer;
  auto whole = p->parser->Parse(answer, /*partial=*/false);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_EQ(whole->reasoning, "I add.\n");
  EXPECT_EQ(whole->content, "It is 4.");
  EXPECT_TRUE(whole->tool_calls.empty());
  // Streamed: deltas only ever append.
  ExpectStreamedPartsGrow(*p->parser, answer, *whole);

  // Thinking off: the prompt closes the block itself, and what the model
  // writes is all answer.
  ChatOptions off;
  off.enable_thinking = false;
  auto q = m->ApplyChatTemplate({{"user", "What is 2 + 2?"}}, nullptr, off);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_TRUE(EndsWith(q->text, f.disabled_prompt_tail)) << q->text;
  EXPECT_FALSE(q->thinking.open);

  // No split: the thinking stays in the content, and there is nothing to parse.
  ChatOptions raw;
  raw.parse_reasoning = false;
  auto r = m->ApplyChatTemplate({{"user", "What is 2 + 2?"}}, nullptr, raw);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->parser, nullptr);
  EXPECT_EQ(r->thinking.end, "</think>");  // still known: reasoning tokens are counted
}

INSTANTIATE_TEST_SUITE_P(
    Templates, Thinking,
    ::testing::Values(Family{"qwen3", "qwen3.jinja", false, "<think>\nI add.\n</think>\n\nIt is 4.",
                             "<|im_start|>assistant\n<think>\n\n</think>\n\n"},
                      Family{"deepseek_r1", "deepseek-r1-distill.jinja", true,
                             "I add.\n</think>\n\nIt is 4.", "<think>\n</think>"},
                      Family{"smollm3", "smollm3.jinja", false,
                             "<think>\nI add.\n</think>\n\nIt is 4.",
                             "<|im_start|>assistant\n<think>\n\n</think>\n"}),
    [](const ::testing::TestParamInfo<Family>& i) { return i.param.name; });

TEST(Thinking, TemplatesWithoutABlockHaveNoTagsAndNoParser) {
  OUTPOST_TEST_MODEL(model);
  InstallLlamaLogger(false);
  for (const char* f : {"chatml.jinja", "llama3.jinja", "qwen2.5-tools.jinja"}) {
    auto m = LoadWith(model, f);
    ASSERT_NE(m, nullptr);
    auto p = m->ApplyChatTemplate({{"user", "Hi"}}, nullptr, ChatOptions());
    ASSERT_TRUE(p.ok()) << f;
    EXPECT_TRUE(p->thinking.end.empty()) << f;
    EXPECT_EQ(p->parser, nullptr) << f;
  }
}

TEST(Thinking, EarlierThinkingGoesBackToTheTemplate) {
  OUTPOST_TEST_MODEL(model);
  InstallLlamaLogger(false);
  auto m = LoadWith(model, "qwen3.jinja");
  ASSERT_NE(m, nullptr);
  // An agent's turn: the model thought, called a tool, and now reads the
  // result. Qwen 3 shows the thinking of turns after the last user message.
  ChatMessage call("assistant", "");
  call.reasoning = "I should look up the weather.";
  call.tool_calls =
      R"([{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}])";
  ChatMessage result("tool", "sunny");
  result.tool_call_id = "c1";
  auto p =
      m->ApplyChatTemplate({{"user", "Weather in Paris?"}, call, result}, nullptr, ChatOptions());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_NE(p->text.find("<think>\nI should look up the weather.\n</think>"), std::string::npos)
      << p->text;
}

TEST(Thinking, TemplateVariablesReachTheTemplate) {
  OUTPOST_TEST_MODEL(model);
  InstallLlamaLogger(false);
  auto m = LoadWith(model, "gpt-oss.jinja");
  ASSERT_NE(m, nullptr);
  ChatOptions o;
  o.template_kwargs = {{"reasoning_effort", "\"high\""}};
  auto p = m->ApplyChatTemplate({{"user", "Hi"}}, nullptr, o);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_NE(p->text.find("Reasoning: high"), std::string::npos) << p->text;
  auto d = m->ApplyChatTemplate({{"user", "Hi"}}, nullptr, ChatOptions());
  ASSERT_TRUE(d.ok());
  EXPECT_NE(d->text.find("Reasoning: medium"), std::string::npos) << d->text;
  // gpt-oss thinks in its analysis channel; the parser reads it out.
  ASSERT_NE(d->parser, nullptr);
  auto a = d->parser->Parse(
      "<|channel|>analysis<|message|>Say hi back.<|end|><|start|>assistant<|channel|>final"
      "<|message|>Hello!",
      false);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->reasoning, "Say hi back.");
  EXPECT_EQ(a->content, "Hello!");
}

// Every string over `alphabet` of length 0..max_len, appended to `out`.
void AllStrings(const std::string& alphabet, size_t max_len, std::vector<std::string>* out) {
  std::vector<std::string> level = {""};
  out->push_back("");
  for (size_t len = 1; len <= max_len; ++len) {
    std::vector<std::string> next;
    for (const auto& s : level) {
      for (char c : alphabet) next.push_back(s + c);
    }
    out->insert(out->end(), next.begin(), next.end());
    level = std::move(next);
  }
}

TEST(ThinkingGrammar, UntilMatchesUpToTheFirstEndTagExactly) {
  // Tags that overlap themselves ("aab", "abab") need the automaton's
  // fallbacks; "</think>" and gpt-oss's "<|end|>" are the real ones.
  for (const std::string end : {"aab", "abab", "aaa", "</think>", "<|end|>"}) {
    Matcher until("root ::= until\n" + UntilRules("until", end));
    std::string alphabet;
    for (char c : end) {
      if (alphabet.find(c) == std::string::npos) alphabet += c;
    }
    alphabet += 'x';
    std::vector<std::string> texts;
    AllStrings(alphabet, end.size() > 4 ? 4 : 7, &texts);
    if (end.size() > 4) {
      // Long tags: the tag itself after every short text, and twice.
      const size_t n = texts.size();
      for (size_t i = 0; i < n; ++i) {
        texts.push_back(texts[i] + end);
        texts.push_back(texts[i] + end + end);
        texts.push_back(end.substr(0, end.size() - 1) + texts[i] + end);
      }
    }
    for (const auto& t : texts) {
      const size_t first = t.find(end);
      const bool want = first != std::string::npos && first + end.size() == t.size();
      EXPECT_EQ(until(t), want) << "end " << end << " text '" << t << "'";
      const bool viable = first == std::string::npos || first + end.size() == t.size();
      EXPECT_EQ(until.Admits(t), viable) << "end " << end << " text '" << t << "'";
    }
  }
}

TEST(ThinkingGrammar, TheAnswerFollowsItsGrammarAfterTheBlock) {
  auto json = JsonSchemaToGrammar(
      R"({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]})", "schema");
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  ThinkingBlock block{"<think>", "</think>", /*open=*/true};

  Matcher opened(GrammarAfterThinking(*json, block));
  EXPECT_TRUE(opened("I add 2 and 2.\n</think>\n\n{\"n\": 4}"));
  EXPECT_TRUE(opened("</think>{\"n\": 4}"));
  EXPECT_TRUE(opened.Admits("I add </thi"));
  EXPECT_TRUE(opened.Admits("<think> even a second opening tag is only text"));
  EXPECT_FALSE(opened("{\"n\": 4}"));  // the block must close first
  EXPECT_FALSE(opened("I add.\n</think>\n\nIt is 4."));
  EXPECT_FALSE(opened.Admits("I add.</think>It"));
  EXPECT_FALSE(opened("I add.</think>{\"n\": 4}</think>"));

  block.open = false;
  Matcher optional(GrammarAfterThinking(*json, block));
  EXPECT_TRUE(optional("{\"n\": 4}"));
  EXPECT_TRUE(optional("<think>\nI add.\n</think>\n\n{\"n\": 4}"));
  EXPECT_TRUE(optional("\n<think></think>{\"n\": 4}"));
  EXPECT_FALSE(optional("I add.</think>{\"n\": 4}"));
  EXPECT_FALSE(optional("<think>I add.</think>It is 4."));
  EXPECT_FALSE(optional("{\"n\": \"four\"}"));
  EXPECT_FALSE(optional("<think>I add.{\"n\": 4}"));  // never closed
}

// A grammar a client wrote (the `grammar` field): its start rule may be
// referred to inside it, written anywhere on its line, and its last line
// may have no newline; only the name `root` itself is renamed.
TEST(ThinkingGrammar, AClientsGrammarKeepsItsOwnRules) {
  const std::string gbnf =
      "  root ::= \"(\" (root | rooted)? \")\" # a root in a comment\n"
      "rooted ::= [a-z]+ \"root\" [root]";
  ASSERT_TRUE(ParseGrammar(gbnf, nullptr, "grammar").ok());
  const ThinkingBlock block{"<think>", "</think>", /*open=*/false};
  const std::string wrapped = GrammarAfterThinking(gbnf, block);
  ASSERT_TRUE(ParseGrammar(wrapped, nullptr, "grammar").ok()) << wrapped;
  Matcher m(wrapped);
  EXPECT_TRUE(m("(())"));
  EXPECT_TRUE(m("<think>nested?</think>((xroott))"));
  EXPECT_FALSE(m("(<think>x</think>)"));  // the block comes first, once
  EXPECT_FALSE(m("((abc))"));             // "root" must follow the letters
}

}  // namespace
}  // namespace outpost::engine

// AnswerStream: a tool-calling or thinking answer streamed as OpenAI deltas,
// fed piece by piece through a parser whose partial results grow (as
// llama.cpp's do); ApplyParsedAnswer for a whole answer.
#include "outpost/api/parsed_answer.h"

#include <gtest/gtest.h>

#include "mocks/seeded_random.h"

namespace outpost::api {
namespace {

// A toy format: text before "CALL name(" is content; what follows up to ")" is
// the arguments. Partial parses report what is there so far.
class ToyParser : public engine::AnswerParser {
 public:
  StatusOr<engine::ParsedAnswer> Parse(const std::string& text, bool partial) const override {
    engine::ParsedAnswer a;
    const size_t at = text.find("CALL ");
    if (at == std::string::npos) {
      // Hold back a possible start of "CALL " while streaming.
      size_t keep = text.size();
      for (size_t k = 1; partial && k <= 4 && k <= text.size(); ++k) {
        if (std::string("CALL ").compare(0, k, text, text.size() - k, k) == 0)
          keep = text.size() - k;
      }
      a.content = text.substr(0, keep);
      return a;
    }
    a.content = text.substr(0, at);
    const size_t open = text.find('(', at);
    if (open == std::string::npos) {
      if (!partial) return Status::InvalidArgument("no (");
      return a;
    }
    engine::ToolCall c;
    c.name = text.substr(at + 5, open - at - 5);
    const size_t close = text.find(')', open);
    if (close == std::string::npos && !partial) return Status::InvalidArgument("no )");
    c.arguments =
        text.substr(open + 1, (close == std::string::npos ? text.size() : close) - open - 1);
    a.tool_calls.push_back(c);
    return a;
  }
};

// A toy thinking format: "<t>" thinking "</t>" then content.
class ToyThinkingParser : public engine::AnswerParser {
 public:
  StatusOr<engine::ParsedAnswer> Parse(const std::string& text, bool partial) const override {
    engine::ParsedAnswer a;
    if (text.rfind("<t>", 0) != 0) {
      a.content = text;
      return a;
    }
    const size_t end = text.find("</t>");
    if (end == std::string::npos) {
      if (!partial) return Status::InvalidArgument("no </t>");
      a.reasoning = text.substr(3);
      const size_t tag = a.reasoning.rfind('<');  // a possible start of "</t>"
      if (tag != std::string::npos) a.reasoning.resize(tag);
      return a;
    }
    a.reasoning = text.substr(3, end - 3);
    a.content = text.substr(end + 4);
    return a;
  }
};

TEST(AnswerStream, SendsTheThinkingThenTheContentEachAsItGrows) {
  outpost::testing::SeededRandom random(1);
  AnswerStream s(std::make_shared<ToyThinkingParser>(), &random);
  std::vector<std::pair<std::string, std::string>> deltas;  // (reasoning, content)
  for (const char* piece : {"<t>I", " add", ".<", "/t>", "It is", " 4."}) {
    Choice d = s.Feed(piece);
    if (!d.reasoning.empty() || !d.text.empty()) deltas.emplace_back(d.reasoning, d.text);
  }
  Choice end = s.Finish(/*cut=*/false);
  EXPECT_TRUE(end.reasoning.empty() && end.text.empty());
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(deltas,
            (std::vector<P>{{"I", ""}, {" add", ""}, {".", ""}, {"", "It is"}, {"", " 4."}}));
  EXPECT_FALSE(s.called());

  Choice whole;
  whole.text = "<t>I add.</t>It is 4.";
  whole.finish = scheduler::FinishReason::kStop;
  ApplyParsedAnswer(&whole, ToyThinkingParser(), random);
  EXPECT_EQ(whole.reasoning, "I add.");
  EXPECT_EQ(whole.text, "It is 4.");
  EXPECT_FALSE(whole.tool_calls_finish);
  // Cut inside the thinking: what it holds so far.
  Choice cut;
  cut.text = "<t>I ad";
  cut.finish = scheduler::FinishReason::kLength;
  ApplyParsedAnswer(&cut, ToyThinkingParser(), random);
  EXPECT_EQ(cut.reasoning, "I ad");
  EXPECT_EQ(cut.text, "");
}

TEST(AnswerStream, SendsContentThenTheCallThenItsArgumentsAsTheyGrow) {
  outpost::testing::SeededRandom random(1);
  AnswerStream s(std::make_shared<ToyParser>(), &random);
  std::string content;
  std::vector<ToolCall> deltas;
  for (const char* piece :
       {"Let me ", "check. CA", "LL get", "_weather(", "{\"city\":", "\"Paris\"}", ")"}) {
    Choice d = s.Feed(piece);
    content += d.text;
    for (auto& c : d.tool_calls) deltas.push_back(c);
  }
  Choice end = s.Finish(/*cut=*/false);
  content += end.text;
  for (auto& c : end.tool_calls) deltas.push_back(c);

  EXPECT_EQ(content, "Let me check. ");
  ASSERT_GE(deltas.size(), 2u);
  // First delta: index, id, name; the rest: arguments to append.
  EXPECT_EQ(deltas[0].index, 0);
  EXPECT_EQ(deltas[0].name, "get_weather");
  EXPECT_EQ(deltas[0].id.rfind("call_", 0), 0u);
  std::string args = deltas[0].arguments;
  for (size_t i = 1; i < deltas.size(); ++i) {
    EXPECT_EQ(deltas[i].index, 0);
    EXPECT_TRUE(deltas[i].id.empty());
    EXPECT_TRUE(deltas[i].name.empty());
    args += deltas[i].arguments;
  }
  EXPECT_EQ(args, "{\"city\":\"Paris\"}");
  EXPECT_TRUE(s.called());
}

TEST(AnswerStream, ACutAnswerEndsWithWhatItHoldsAndIsNoCall) {
  outpost::testing::SeededRandom random(1);
  AnswerStream s(std::make_shared<ToyParser>(), &random);
  std::string content, args;
  for (const char* piece : {"Sure. ", "CALL f(", "{\"a\""}) {
    Choice d = s.Feed(piece);
    content += d.text;
    for (auto& c : d.tool_calls) args += c.arguments;
  }
  Choice end = s.Finish(/*cut=*/true);  // max_tokens cut it here
  content += end.text;
  for (auto& c : end.tool_calls) args += c.arguments;
  EXPECT_EQ(content, "Sure. ");  // never "CALL f(": the format's markup
  EXPECT_EQ(args, "{\"a\"");
  EXPECT_FALSE(s.called());  // finish_reason stays "length"
}

TEST(AnswerStream, AnAnswerThatNeverParsesIsSentAsText) {
  outpost::testing::SeededRandom random(1);
  // Not the format at all, whole or partial.
  class Never : public engine::AnswerParser {
   public:
    StatusOr<engine::ParsedAnswer> Parse(const std::string&, bool) const override {
      return Status::InvalidArgument("not the format");
    }
  };
  AnswerStream s(std::make_shared<Never>(), &random);
  EXPECT_EQ(s.Feed("<odd>").text, "");
  EXPECT_EQ(s.Finish(/*cut=*/false).text, "<odd>");
  EXPECT_FALSE(s.called());
}

TEST(ToolAnswer, WholeAnswerBecomesCallsWithIds) {
  outpost::testing::SeededRandom random(1);
  Choice c;
  c.text = "Sure. CALL f({\"a\":1})";
  ApplyParsedAnswer(&c, ToyParser(), random);
  EXPECT_EQ(c.text, "Sure. ");
  ASSERT_EQ(c.tool_calls.size(), 1u);
  EXPECT_EQ(c.tool_calls[0].name, "f");
  EXPECT_EQ(c.tool_calls[0].arguments, "{\"a\":1}");
  EXPECT_TRUE(c.tool_calls_finish);
  // Cut short: what it holds — the call so far, no markup — and no
  // "tool_calls" finish (a cut answer's finish_reason is "length").
  Choice cut;
  cut.text = "CALL f({\"a\"";
  cut.finish = scheduler::FinishReason::kLength;
  ApplyParsedAnswer(&cut, ToyParser(), random);
  EXPECT_EQ(cut.text, "");
  ASSERT_EQ(cut.tool_calls.size(), 1u);
  EXPECT_EQ(cut.tool_calls[0].name, "f");
  EXPECT_EQ(cut.tool_calls[0].arguments, "{\"a\"");
  EXPECT_FALSE(cut.tool_calls_finish);
  // Cut before a name is complete: nothing to show but the content so far.
  Choice early;
  early.text = "Hm. CALL f";
  ApplyParsedAnswer(&early, ToyParser(), random);
  EXPECT_EQ(early.text, "Hm. ");
  EXPECT_TRUE(early.tool_calls.empty());
}

// As some of llama.cpp's formats (Qwen's): a cut call parses as whole.
class LenientParser : public ToyParser {
 public:
  StatusOr<engine::ParsedAnswer> Parse(const std::string& text, bool) const override {
    return ToyParser::Parse(text, /*partial=*/true);
  }
};

TEST(ToolAnswer, AnAnswerCutByMaxTokensIsNoCallWhateverTheParserAccepts) {
  outpost::testing::SeededRandom random(1);
  Choice c;
  c.text = "CALL f({\"a\"";
  c.finish = scheduler::FinishReason::kLength;
  ApplyParsedAnswer(&c, LenientParser(), random);
  ASSERT_EQ(c.tool_calls.size(), 1u);
  EXPECT_EQ(c.tool_calls[0].arguments, "{\"a\"");
  EXPECT_FALSE(c.tool_calls_finish);  // "length", not "tool_calls"
  // Ended by the model, the same parser's call is one.
  Choice whole;
  whole.text = "CALL f({\"a\":1})";
  whole.finish = scheduler::FinishReason::kStop;
  ApplyParsedAnswer(&whole, LenientParser(), random);
  EXPECT_TRUE(whole.tool_calls_finish);

  for (const bool cut : {true, false}) {
    AnswerStream s(std::make_shared<LenientParser>(), &random);
    s.Feed("CALL f(");
    s.Feed("{\"a\"");
    s.Finish(cut);
    EXPECT_EQ(s.called(), !cut);
  }
}

}  // namespace
}  // namespace outpost::api

// A prefilled answer (ChatOptions::Ending): the prompt leaves the last,
// assistant message open, and the answer continues its content or its
// thinking (vLLM's and llama-server's continue_final_message), through
// llama.cpp's chat code with the default model's vocabulary. What the parser
// gives back is only what the model adds; a prompt without the assistant
// header (add_generation_prompt false) ends where the messages end.
#include <gtest/gtest.h>

#include "engine/template_model.h"
#include "mocks/test_model.h"

#include <string>
#include <vector>

#include "outpost/engine/model.h"

namespace outpost::engine {
namespace {

using ::outpost::engine::testing::EndsWith;
using ::outpost::engine::testing::ExpectStreamedPartsGrow;
using ::outpost::engine::testing::LoadWith;

using Ending = ChatOptions::Ending;

ChatOptions With(Ending e) {
  ChatOptions o;
  o.ending = e;
  return o;
}

TEST(Continuation, APlainTemplateLeavesTheAssistantsTextOpen) {
  OUTPOST_TEST_MODEL(model);
  InstallLlamaLogger(false);
  auto m = LoadWith(model, "chatml.jinja");
  ASSERT_NE(m, nullptr);
  const std::vector<ChatMessage> msgs = {{"user", "Capital of France?"},
                                         {"assistant", "The capital of France is"}};
  auto open = m->ApplyChatTemplate(msgs, nullptr, With(Ending::kContinueContent));
  ASSERT_TRUE(open.ok()) << open.status().ToString();
  EXPECT_TRUE(EndsWith(open->text, "<|im_start|>assistant\nThe capital of France is"))
      << open->text;
  EXPECT_EQ(open->text.find("Capital of France?"), open->text.rfind("Capital of France?"));
  EXPECT_EQ(open->parser, nullptr);  // what the model writes is all content

  // The same conversation as a new turn: the message closed, a header after it.
  auto turn = m->ApplyChatTemplate(msgs, nullptr, ChatOptions());
  ASSERT_TRUE(turn.ok());
  EXPECT_TRUE(EndsWith(turn->text, "The capital of France is<|im_end|>\n<|im_start|>assistant\n"))
      << turn->text;
  // Without the header: the messages alone.
  auto counted = m->ApplyChatTemplate(msgs, nullptr, With(Ending::kNoHeader));
  ASSERT_TRUE(counted.ok());
  EXPECT_TRUE(EndsWith(counted->text, "The capital of France is<|im_end|>\n")) << counted->text;

  // No thinking block: no thinking to continue, and llama.cpp would have
  // dropped the message; refused instead.
  ChatMessage thought("assistant", "");
  thought.reasoning = "Hm";
  auto refused =
      m->ApplyChatTemplate({msgs[0], thought}, nullptr, With(Ending::kContinueReasoning));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().param(), "continue_final_message");
  EXPECT_NE(refused.status().message().find("no thinking block"), std::string::npos);
}

struct Family {
  const char* name;
  const char* template_file;
};

void PrintTo(const Family& f, std::ostream* os) {
  *os << f.name;
}

class ThinkingContinuation : public ::testing::TestWithParam<Family> {};

TEST_P(ThinkingContinuation, TheThinkingGoesOnAndOnlyTheNewPartComesBack) {
  OUTPOST_TEST_MODEL(model);
  InstallLlamaLogger(false);
  auto m = LoadWith(model, GetParam().template_file);
  ASSERT_NE(m, nullptr);
  ChatMessage thought("assistant", "");
  thought.reasoning = "I ad";
  auto p = m->ApplyChatTemplate({{"user", "What is 2 + 2?"}, thought}, nullptr,
                                With(Ending::kContinueReasoning));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  // The prompt ends inside the block, with the thinking so far (the
  // templates differ on the newline after the tag).
  const size_t tag = p->text.rfind("<think>");
  ASSERT_NE(tag, std::string::npos) << p->text;
  const std::string inside = p->text.substr(tag + 7);
  EXPECT_EQ(inside.substr(inside.find_first_not_of('\n')), "I ad") << p->text;
  EXPECT_TRUE(p->thinking.open);  // the answer starts inside the block
  ASSERT_NE(p->parser, nullptr);

  const std::string answer = "d.\n</think>\n\nIt is 4.";
  auto whole = p->parser->Parse(answer, /*partial=*/false);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_EQ(whole->reasoning, "d.\n");  // "I ad" was the client's
  EXPECT_EQ(whole->content, "It is 4.");
  // Streamed: deltas only ever append.
  ExpectStreamedPartsGrow(*p->parser, answer, *whole);
}

TEST_P(ThinkingContinuation, ContinuedContentComesAfterAClosedBlock) {
  OUTPOST_TEST_MODEL(model);
  InstallLlamaLogger(false);
  auto m = LoadWith(model, GetParam().template_file);
  ASSERT_NE(m, nullptr);
  ChatMessage answered("assistant", "It is");
  answered.reasoning = "I add.";
  auto p = m->ApplyChatTemplate({{"user", "What is 2 + 2?"}, answered}, nullptr,
                                With(Ending::kContinueContent));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  const size_t think = p->text.rfind("I add.");
  ASSERT_NE(think, std::string::npos) << p->text;
  EXPECT_NE(p->text.find("</think>", think), std::string::npos) << p->text;
  EXPECT_TRUE(EndsWith(p->text, "It is")) << p->text;
  // The block is closed in the prompt: the answer does not think, and its
  // text is content as the model writes it.
  EXPECT_TRUE(p->thinking.end.empty());
  EXPECT_FALSE(p->thinking.open);
  EXPECT_EQ(p->parser, nullptr);
}

INSTANTIATE_TEST_SUITE_P(Templates, ThinkingContinuation,
                         ::testing::Values(Family{"qwen3", "qwen3.jinja"},
                                           Family{"deepseek_r1", "deepseek-r1-distill.jinja"},
                                           Family{"smollm3", "smollm3.jinja"}),
                         [](const ::testing::TestParamInfo<Family>& i) { return i.param.name; });

}  // namespace
}  // namespace outpost::engine

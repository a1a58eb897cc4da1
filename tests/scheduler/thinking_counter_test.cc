// ThinkingCounter: the thinking tokens of an answer, from each token's text.
#include "outpost/scheduler/thinking_counter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace outpost::scheduler {
namespace {

int32_t Count(const engine::ThinkingBlock& block, const std::vector<std::string>& tokens) {
  ThinkingCounter c(block);
  for (const auto& t : tokens) c.Add(t);
  return c.tokens();
}

const engine::ThinkingBlock kQwen{"<think>", "</think>", false};
const engine::ThinkingBlock kOpened{"<think>", "</think>", true};

TEST(ThinkingCounter, CountsUpToTheTokenThatClosesTheBlock) {
  // "<think>" and "</think>" as whole tokens (Qwen 3's vocabulary).
  EXPECT_EQ(Count(kQwen, {"<think>", "\n", "I", " add", "\n", "</think>", "\n\n", "4"}), 6);
  // The tags split over tokens, and the closing tag inside a token.
  EXPECT_EQ(Count(kQwen, {"<", "think", ">", "I add", ".</", "thi", "nk>\n\nIt", " is", " 4"}), 7);
  EXPECT_EQ(Count(kQwen, {"<think>I add.</think>It", " is 4"}), 1);
  // Whitespace before the opening tag is part of it.
  EXPECT_EQ(Count(kQwen, {"\n", " <think>", "x", "</think>", "y"}), 4);
}

TEST(ThinkingCounter, AnAnswerThatDoesNotOpenTheBlockHasNone) {
  EXPECT_EQ(Count(kQwen, {"It", " is", " 4", "."}), 0);
  EXPECT_EQ(Count(kQwen, {"<", "b>bold</b>"}), 0);              // starts like the tag, is not
  EXPECT_EQ(Count(kQwen, {"I think <think>", "</think>"}), 0);  // not at the start
  EXPECT_EQ(Count(kQwen, {"\n", "  "}), 0);                     // nothing yet
  EXPECT_EQ(Count(kQwen, {"<thi"}), 0);                         // undecided at the end
}

TEST(ThinkingCounter, APromptThatOpenedTheBlockCountsFromTheFirstToken) {
  EXPECT_EQ(Count(kOpened, {"I", " add", ".", "</think>", "4"}), 4);
  EXPECT_EQ(Count(kOpened, {"</think>", "4"}), 1);
  // Never closed (max_tokens): all of it.
  EXPECT_EQ(Count(kOpened, {"I", " add", " and", " add"}), 4);
  // A text that only ends like the tag's start does not close it.
  EXPECT_EQ(Count(kOpened, {"a</", "b</think", "x", "</think>", "y"}), 4);
  // Empty pieces (a control token's) count too.
  EXPECT_EQ(Count(kOpened, {"", "a", "</think>", "b"}), 3);
}

TEST(ThinkingCounter, NoBlockNoThinking) {
  EXPECT_EQ(Count(engine::ThinkingBlock{}, {"<think>", "x", "</think>"}), 0);
  EXPECT_EQ(Count(engine::ThinkingBlock{"", "</think>", false}, {"x", "</think>"}), 0);
  // gpt-oss: its analysis channel is the block.
  const engine::ThinkingBlock oss{"<|channel|>analysis<|message|>", "<|end|>", false};
  EXPECT_EQ(Count(oss, {"<|channel|>", "analysis", "<|message|>", "Hi", "<|end|>", "<|start|>"}),
            5);
}

}  // namespace
}  // namespace outpost::scheduler

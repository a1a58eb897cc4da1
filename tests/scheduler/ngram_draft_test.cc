#include "outpost/scheduler/ngram_draft.h"

#include <gtest/gtest.h>

#include <string>

namespace outpost::scheduler {
namespace {

std::vector<engine::Token> T(const std::string& s) {
  return {s.begin(), s.end()};
}

TEST(NgramDraft, ProposesWhatFollowedTheLatestEarlierOccurrenceOfTheSuffix) {
  // "...the red box. Put the red" → " box" follows "the red" before.
  EXPECT_EQ(NgramDraft(T("the red box. put the red"), 4), T(" box"));
  // Shorter suffixes are tried when a longer one never appeared.
  EXPECT_EQ(NgramDraft(T("xyQab1 ab"), 2), T("1 "));
  // The latest occurrence wins over an earlier one.
  EXPECT_EQ(NgramDraft(T("ab1 ab2 ab"), 1), T("2"));
  // At most max_tokens, and only what exists after the match.
  EXPECT_EQ(NgramDraft(T("abcdefabc"), 2), T("de"));
  EXPECT_EQ(NgramDraft(T("abcab"), 8), T("cab"));
}

TEST(NgramDraft, NothingWhenNoSuffixRepeatsOrNothingIsAsked) {
  EXPECT_TRUE(NgramDraft(T("abcdefg"), 4).empty());
  EXPECT_TRUE(NgramDraft(T("aa"), 4).empty());  // too short for a match before the suffix
  EXPECT_TRUE(NgramDraft(T("abab"), 0).empty());
  EXPECT_TRUE(NgramDraft({}, 4).empty());
}

}  // namespace
}  // namespace outpost::scheduler

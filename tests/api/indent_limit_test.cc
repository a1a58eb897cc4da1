// llama-server's n_indent rule (api/indent_limit.h), fed as an answer grows.
#include "outpost/api/indent_limit.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace outpost::api {
namespace {

// The answer an IndentLimit of `n` leaves when `pieces` arrive one by one.
std::string Kept(int32_t n, const std::vector<std::string>& pieces) {
  IndentLimit limit(n);
  std::string text;
  for (const std::string& p : pieces) {
    text += p;
    text.resize(limit.End(text));
  }
  return text;
}

TEST(IndentLimit, EndsBeforeTheFirstLineLeftOfTheIndent) {
  // The first line is the cursor's: never checked.
  EXPECT_EQ(Kept(4, {"x = 1", "\n", "    y", " = 2\n", "z = 3\n"}), "x = 1\n    y = 2\n");
  // A line at the indent or deeper goes on; tabs count as blanks.
  EXPECT_EQ(Kept(4, {"a\n        b\n\t\t\t\tc\n    d"}), "a\n        b\n\t\t\t\tc\n    d");
  // Its blanks are kept, its first character and the rest dropped.
  EXPECT_EQ(Kept(4, {"a\n  ", "b", "cd\n    e"}), "a\n  ");
  // A blank line is a line at indentation 0 (llama-server's rule).
  EXPECT_EQ(Kept(2, {"a\n\n  b"}), "a\n");
  // Several lines in one piece: the first short one ends it.
  EXPECT_EQ(Kept(2, {"a\n  b\n c\n  d"}), "a\n  b\n ");
}

TEST(IndentLimit, BlanksAloneLeaveItOpen) {
  IndentLimit limit(4);
  EXPECT_EQ(limit.End("a\n  "), 4u);  // the line's indent is not known yet
  EXPECT_FALSE(limit.cut());
  EXPECT_EQ(limit.End("a\n      b"), 9u);  // six blanks: deep enough
  EXPECT_FALSE(limit.cut());
  EXPECT_EQ(limit.End("a\n      b\nc"), 10u);
  EXPECT_TRUE(limit.cut());
  EXPECT_EQ(limit.End("a\n      b\ncdef"), 10u);  // once cut, the same end
}

TEST(IndentLimit, ZeroIsNoLimit) {
  EXPECT_EQ(Kept(0, {"a\nb\n\nc"}), "a\nb\n\nc");
  IndentLimit none(0);
  EXPECT_EQ(none.End("x\ny"), 3u);
  EXPECT_FALSE(none.cut());
}

}  // namespace
}  // namespace outpost::api

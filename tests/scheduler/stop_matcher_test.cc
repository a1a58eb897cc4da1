#include "outpost/scheduler/stop_matcher.h"

#include <gtest/gtest.h>

namespace outpost::scheduler {
namespace {

// Feeds pieces one by one and returns everything emitted (plus the flush when
// no stop was found).
std::string FeedAll(StopMatcher& m, const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) out += m.Feed(p);
  if (!m.stopped()) out += m.Flush();
  return out;
}

TEST(StopMatcher, NoStopsPassesEverythingThrough) {
  StopMatcher m({});
  EXPECT_EQ(m.Feed("hello"), "hello");
  EXPECT_EQ(m.Feed(" world"), " world");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, StopInsideOnePiece) {
  StopMatcher m({"END"});
  EXPECT_EQ(m.Feed("abcENDdef"), "abc");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.matched(), "END");
  EXPECT_EQ(m.Feed("more"), "");
}

TEST(StopMatcher, StopAcrossTokenBoundaries) {
  StopMatcher m({"###"});
  EXPECT_EQ(FeedAll(m, {"Hello", " #", "#", "# tail"}), "Hello ");
  EXPECT_TRUE(m.stopped());
}

TEST(StopMatcher, HoldsBackOnlyWhatCouldStartAStop) {
  StopMatcher m({"</s>"});
  EXPECT_EQ(m.Feed("a<"), "a");   // "<" may start "</s>"
  EXPECT_EQ(m.Feed("b"), "<b");   // ruled out: released
  EXPECT_EQ(m.Feed("</"), "");    // held
  EXPECT_EQ(m.Feed("x"), "</x");  // ruled out
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, FalseStartThenRealStop) {
  StopMatcher m({"abc"});
  EXPECT_EQ(FeedAll(m, {"ab", "ab", "c", "zzz"}), "ab");
  EXPECT_TRUE(m.stopped());
}

TEST(StopMatcher, EarliestOfSeveralStopsWins) {
  StopMatcher m({"world", "lo w"});
  EXPECT_EQ(FeedAll(m, {"hel", "lo wor", "ld"}), "hel");
  EXPECT_EQ(m.matched(), "lo w");
}

TEST(StopMatcher, FlushReturnsHeldTailWhenGenerationEnds) {
  StopMatcher m({"STOP"});
  EXPECT_EQ(m.Feed("end ST"), "end ");
  EXPECT_EQ(m.Flush(), "ST");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, EmptyStopStringsAreIgnored) {
  StopMatcher m({"", "x"});
  EXPECT_EQ(FeedAll(m, {"abc"}), "abc");
}

TEST(StopMatcher, MultiByteStopAcrossPieces) {
  StopMatcher m({"\xE2\x9C\x93"});  // U+2713 check mark
  EXPECT_EQ(FeedAll(m, {"ok \xE2", "\x9C", "\x93 done"}), "ok ");
  EXPECT_TRUE(m.stopped());
}

}  // namespace
}  // namespace outpost::scheduler

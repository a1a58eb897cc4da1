#include "outpost/util/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace outpost::util {
namespace {

TEST(IncompleteUtf8Tail, AsciiIsComplete) {
  EXPECT_EQ(IncompleteUtf8Tail(""), 0u);
  EXPECT_EQ(IncompleteUtf8Tail("hello"), 0u);
}

TEST(IncompleteUtf8Tail, HoldsBackPartialCharacters) {
  const std::string euro = "\xE2\x82\xAC";       // 3 bytes
  const std::string emoji = "\xF0\x9F\x98\x80";  // 4 bytes
  EXPECT_EQ(IncompleteUtf8Tail("a" + euro), 0u);
  EXPECT_EQ(IncompleteUtf8Tail("a" + euro.substr(0, 1)), 1u);
  EXPECT_EQ(IncompleteUtf8Tail("a" + euro.substr(0, 2)), 2u);
  EXPECT_EQ(IncompleteUtf8Tail(emoji.substr(0, 3)), 3u);
  EXPECT_EQ(IncompleteUtf8Tail(emoji), 0u);
  EXPECT_EQ(IncompleteUtf8Tail("\xC3"), 1u);  // first half of é
}

TEST(IncompleteUtf8Tail, InvalidBytesAreNotHeld) {
  EXPECT_EQ(IncompleteUtf8Tail("\xFF"), 0u);
  EXPECT_EQ(IncompleteUtf8Tail("abc\x80"), 0u);  // stray continuation byte
}

// Simulates streaming: an emoji split over token pieces never appears half.
TEST(IncompleteUtf8Tail, StreamingNeverSplitsACharacter) {
  const std::string text = "h\xC3\xA9llo \xF0\x9F\x98\x80 w\xE2\x82\xACrld";
  for (size_t cut = 1; cut < text.size(); ++cut) {
    std::string pending, emitted;
    for (const std::string& piece : {text.substr(0, cut), text.substr(cut)}) {
      pending += piece;
      const size_t hold = IncompleteUtf8Tail(pending);
      const std::string chunk = pending.substr(0, pending.size() - hold);
      EXPECT_TRUE(IsValidUtf8(chunk)) << "cut at " << cut;
      emitted += chunk;
      pending.erase(0, pending.size() - hold);
    }
    EXPECT_EQ(emitted, text);
  }
}

TEST(IsValidUtf8, Basics) {
  EXPECT_TRUE(IsValidUtf8("plain"));
  EXPECT_TRUE(IsValidUtf8("\xE2\x82\xAC"));
  EXPECT_FALSE(IsValidUtf8("\xE2\x82"));
  EXPECT_FALSE(IsValidUtf8("\xFF"));
}

}  // namespace
}  // namespace outpost::util

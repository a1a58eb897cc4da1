#include "outpost/engine/infill.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace outpost::engine {
namespace {

// A tokenizer of one token per byte; marker tokens above the bytes. A text
// parsed for control tokens reads "@" as token 300 (to see which are).
std::vector<Token> Bytes(std::string_view text, bool special) {
  std::vector<Token> out;
  for (char c : text) out.push_back(special && c == '@' ? 300 : static_cast<unsigned char>(c));
  return out;
}

constexpr Token kPre = 1000, kSuf = 1001, kMid = 1002, kRep = 1003, kSep = 1004, kBos = 1005;

InfillTokens Plain() {
  InfillTokens t;
  t.pre = kPre;
  t.suf = kSuf;
  t.mid = kMid;
  return t;
}

InfillInput Gap(std::string prefix, std::string suffix, std::string prompt = "") {
  InfillInput in;
  in.prefix = std::move(prefix);
  in.suffix = std::move(suffix);
  in.prompt = std::move(prompt);
  return in;
}

std::vector<Token> Seq(std::initializer_list<std::vector<Token>> parts) {
  std::vector<Token> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

TEST(Infill, SupportNeedsTheThreeMarkers) {
  EXPECT_FALSE(InfillTokens().supported());
  InfillTokens t = Plain();
  EXPECT_TRUE(t.supported());
  t.mid = kNoToken;
  EXPECT_FALSE(t.supported());
}

TEST(Infill, PrefixSuffixMiddle) {
  InfillInput in = Gap("ab", "yz");
  EXPECT_EQ(BuildInfillPrompt(Plain(), in, 2048, 1000, Bytes),
            Seq({{kPre}, Bytes("ab", false), {kSuf}, Bytes("yz", false), {kMid}}));
  // BOS first where the tokenizer adds one; the cursor text after the
  // prefix, the only part read for control tokens.
  InfillTokens t = Plain();
  t.bos = kBos;
  in.prompt = "c@";
  EXPECT_EQ(BuildInfillPrompt(t, in, 2048, 1000, Bytes),
            Seq({{kBos, kPre}, Bytes("ab", false), {'c', 300, kSuf}, Bytes("yz", false), {kMid}}));
  // Empty surroundings still carry the markers.
  EXPECT_EQ(BuildInfillPrompt(Plain(), InfillInput(), 2048, 1000, Bytes),
            (std::vector<Token>{kPre, kSuf, kMid}));
}

TEST(Infill, ALongFileIsCutAroundTheGap) {
  // window 40: the prefix keeps its last 30 tokens, the suffix its first
  // 10 - 2 - |prompt|.
  // 81 bytes before the gap.
  InfillInput in =
      Gap(std::string(50, 'p') + "0123456789012345678901234567890", "ABCDEFGHIJKLMNOP", "xy");
  const auto out = BuildInfillPrompt(Plain(), in, 40, 0, Bytes);
  EXPECT_EQ(out, Seq({{kPre},
                      Bytes(in.prefix.substr(in.prefix.size() - 30), false),
                      Bytes("xy", true),
                      {kSuf},
                      Bytes("ABCDEF", false),
                      {kMid}}));
  // A cursor text longer than the suffix's share leaves no suffix, and is
  // itself never cut.
  in.prompt = std::string(12, 'x');
  const auto no_suffix = BuildInfillPrompt(Plain(), in, 40, 0, Bytes);
  EXPECT_EQ(no_suffix.size(), 1 + 30 + 12 + 1 + 0 + 1u);
}

TEST(Infill, OtherFilesComeFirstWithTheRepoMarkers) {
  InfillTokens t = Plain();
  t.rep = kRep;
  t.sep = kSep;
  t.bos = kBos;
  InfillInput in = Gap("a", "z");
  in.extra = {{"util.h", "int f();\n"}, {"", "x"}};
  const auto out = BuildInfillPrompt(t, in, 2048, 1000, Bytes);
  EXPECT_EQ(out, Seq({{kRep},
                      Bytes("myproject\n", false),
                      {kSep},
                      Bytes("util.h\n", false),
                      Bytes("int f();\n", false),
                      {kSep},
                      Bytes("tmp\n", false),  // no name: llama-server's
                      Bytes("x", false),
                      {kSep},
                      Bytes("filename\n", false),
                      {kBos, kPre, 'a', kSuf, 'z', kMid}}));
  // Without a file separator: a snippet line between the files, no
  // repository header unless the model has its token.
  const auto plain = BuildInfillPrompt(Plain(), in, 2048, 1000, Bytes);
  EXPECT_EQ(plain, Seq({Bytes("\n\n--- snippet ---\n\n", false),
                        Bytes("int f();\n", false),
                        Bytes("\n\n--- snippet ---\n\n", false),
                        Bytes("x", false),
                        {kPre, 'a', kSuf, 'z', kMid}}));
}

TEST(Infill, OtherFilesFillOnlyTheRoomLeftKeepingTheLast) {
  InfillInput in = Gap("a", "");
  in.extra = {{"", "0123456789"}};
  // 19 snippet-line tokens + 10: room 4 keeps "6789".
  EXPECT_EQ(BuildInfillPrompt(Plain(), in, 2048, 4, Bytes),
            Seq({Bytes("6789", false), {kPre, 'a', kSuf, kMid}}));
  EXPECT_EQ(BuildInfillPrompt(Plain(), in, 2048, -100, Bytes),
            (std::vector<Token>{kPre, 'a', kSuf, kMid}));
}

}  // namespace
}  // namespace outpost::engine

// NumberRangeGrammar: the grammar admits a plain decimal exactly when its
// value lies within the bounds. Checked with llama.cpp's own grammar engine
// against exact arithmetic (values scaled to integers) over every pair of a
// set of bounds, inclusive, exclusive and open, on a grid of numbers around
// them, plus the forms it never writes (exponents, leading zeros, "-0").
#include "outpost/engine/number_range_grammar.h"

#include <gtest/gtest.h>

#include "engine/grammar_matcher.h"

#include <cstdint>
#include <string>
#include <vector>

namespace outpost::engine {
namespace {

using testing::Matcher;
using testing::Matches;

std::string Grammar(const std::optional<NumberBound>& lo, const std::optional<NumberBound>& hi) {
  auto rules = NumberRangeGrammar("n", lo, hi);
  EXPECT_TRUE(rules.ok()) << rules.status().ToString();
  return "root ::= n\n" + (rules.ok() ? *rules : std::string());
}

constexpr int64_t kScale = 10000;  // the grid's values have at most 4 fraction digits

// "-2.5" -> -25000.
int64_t Scaled(const std::string& s) {
  const bool neg = s[0] == '-';
  const std::string m = neg ? s.substr(1) : s;
  const size_t dot = m.find('.');
  int64_t v = std::stoll(m.substr(0, dot)) * kScale;
  if (dot != std::string::npos) {
    std::string f = m.substr(dot + 1);
    f.resize(4, '0');
    v += std::stoll(f);
  }
  return neg ? -v : v;
}

std::string Text(int64_t v, int fraction_digits) {
  const bool neg = v < 0;
  const int64_t a = neg ? -v : v;
  std::string out = (neg ? "-" : "") + std::to_string(a / kScale);
  if (fraction_digits > 0) {
    std::string f = std::to_string(a % kScale);
    f.insert(0, 4 - f.size(), '0');
    out += "." + f.substr(0, static_cast<size_t>(fraction_digits));
  }
  return out;
}

TEST(NumberRangeGrammar, AdmitsExactlyTheNumbersWithinTheBounds) {
  const std::vector<std::string> bounds = {"-10", "-2.5", "-1", "-0.25", "0",
                                           "0.1", "0.25", "1",  "9.99",  "10"};
  // A grid around the bounds: every value a bound's digits could trip on.
  std::vector<int64_t> grid;
  for (int64_t v = -11 * kScale; v <= 11 * kScale; v += kScale / 4) grid.push_back(v);
  for (const auto& b : bounds) {
    for (int64_t d :
         std::vector<int64_t>{-kScale / 10, -kScale / 100, -1, 0, 1, kScale / 100, kScale / 10}) {
      grid.push_back(Scaled(b) + d);
    }
  }
  grid.push_back(123 * kScale + 4567);
  grid.push_back(-1234 * kScale);
  struct Side {
    std::optional<NumberBound> bound;
    int64_t v = 0;
  };
  std::vector<Side> sides = {{}};
  for (const auto& b : bounds) {
    for (bool ex : {false, true}) sides.push_back({NumberBound{b, ex}, Scaled(b)});
  }
  int grammars = 0, checked = 0;
  for (const auto& lo : sides) {
    for (const auto& hi : sides) {
      auto rules = NumberRangeGrammar("n", lo.bound, hi.bound);
      bool any = false;
      for (int64_t x = -12 * kScale; x <= 12 * kScale && !any; ++x) {
        any = (!lo.bound || (lo.bound->exclusive ? x > lo.v : x >= lo.v)) &&
              (!hi.bound || (hi.bound->exclusive ? x < hi.v : x <= hi.v));
      }
      if (!any) {
        EXPECT_FALSE(rules.ok()) << (lo.bound ? lo.bound->value : "-") << " "
                                 << (hi.bound ? hi.bound->value : "-");
        continue;
      }
      ASSERT_TRUE(rules.ok()) << rules.status().ToString();
      const std::string gbnf = "root ::= n\n" + *rules;
      Matcher matches(gbnf);
      ++grammars;
      for (int64_t x : grid) {
        const bool in = (!lo.bound || (lo.bound->exclusive ? x > lo.v : x >= lo.v)) &&
                        (!hi.bound || (hi.bound->exclusive ? x < hi.v : x <= hi.v));
        for (int digits : {0, 1, 2, 4}) {
          const std::string t = Text(x, digits);
          if (Scaled(t) != x) continue;  // the digits cut the value
          EXPECT_EQ(matches(t), in)
              << t << " within " << (lo.bound ? lo.bound->value : "open")
              << (lo.bound && lo.bound->exclusive ? " (exclusive)" : "") << " .. "
              << (hi.bound ? hi.bound->value : "open")
              << (hi.bound && hi.bound->exclusive ? " (exclusive)" : "") << "\n"
              << gbnf;
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(grammars, 150);
  EXPECT_GT(checked, 80000);
}

TEST(NumberRangeGrammar, WritesPlainDecimalsOnly) {
  const std::string g = Grammar(NumberBound{"-100", false}, NumberBound{"100", false});
  for (const char* ok : {"0", "7", "-7", "99.5", "0.000000000000001", "1.500", "-0.5", "100"}) {
    EXPECT_TRUE(Matches(g, ok)) << ok;
  }
  for (const char* bad : {"-0", "-0.0", "01", "00", "1.", ".5", "1e2", "+1", "1.0000000000000001",
                          "100.01", "-100.5", "", "-", "1 "}) {
    EXPECT_FALSE(Matches(g, bad)) << bad;
  }
  // Open above: integers up to 16 digits, as llama.cpp's own number rule.
  const std::string up = Grammar(NumberBound{"0", true}, std::nullopt);
  EXPECT_TRUE(Matches(up, "1234567890123456"));
  EXPECT_FALSE(Matches(up, "12345678901234567"));
  EXPECT_FALSE(Matches(up, "0"));
  EXPECT_TRUE(Matches(up, "0.000000000000001"));
  EXPECT_FALSE(Matches(up, "0.000000000000000"));
}

TEST(NumberRangeGrammar, BoundsAsJsonWritesThem) {
  // nlohmann writes 1e-7 as 1e-07 and large doubles with an exponent.
  const std::string g = Grammar(NumberBound{"1e-07", false}, NumberBound{"2.5E+2", false});
  EXPECT_TRUE(Matches(g, "0.0000001"));
  EXPECT_FALSE(Matches(g, "0.00000009"));
  EXPECT_TRUE(Matches(g, "250"));
  EXPECT_FALSE(Matches(g, "250.1"));
}

TEST(NumberRangeGrammar, RefusesBoundsItCannotKeep) {
  struct Case {
    std::optional<NumberBound> lo, hi;
    const char* words;
  } cases[] = {
      {NumberBound{"1", false}, NumberBound{"0.5", false}, "no number lies within its bounds"},
      {NumberBound{"1", true}, NumberBound{"1", false}, "no number lies within"},
      {NumberBound{"0", false}, NumberBound{"0", true}, "no number lies within"},
      {NumberBound{"1e15", false}, std::nullopt, "below 10^15"},
      {NumberBound{"0.1234567890123456", false}, std::nullopt, "at most 15 fraction digits"},
      {NumberBound{"abc", false}, std::nullopt, "out of range"},
      {NumberBound{"1e999999", false}, std::nullopt, "out of range"},
  };
  for (const auto& c : cases) {
    auto r = NumberRangeGrammar("n", c.lo, c.hi);
    ASSERT_FALSE(r.ok()) << c.words;
    EXPECT_NE(r.status().message().find(c.words), std::string::npos) << r.status().message();
  }
  // A single point is a range.
  const std::string one = Grammar(NumberBound{"0.5", false}, NumberBound{"0.5", false});
  EXPECT_TRUE(Matches(one, "0.5"));
  EXPECT_TRUE(Matches(one, "0.50"));
  EXPECT_FALSE(Matches(one, "0.51"));
}

}  // namespace
}  // namespace outpost::engine

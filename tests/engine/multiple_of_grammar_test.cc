// MultipleOfGrammar: the grammar admits a number exactly when it is a
// multiple of the step within the bounds, with no more fraction digits than
// the step has. Checked in llama.cpp's own grammar engine against exact
// arithmetic (values scaled to integers) for steps of each kind (a power of
// ten, listed between two bounds, read by remainders) on a grid of numbers.
#include "outpost/engine/multiple_of_grammar.h"

#include <gtest/gtest.h>

#include "engine/grammar_matcher.h"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace outpost::engine {
namespace {

using testing::Matcher;

constexpr int64_t kScale = 1000;  // the grid's values have at most 3 fraction digits

int64_t Scaled(const std::string& s) {
  const bool neg = s[0] == '-';
  const std::string m = neg ? s.substr(1) : s;
  const size_t dot = m.find('.');
  int64_t v = std::stoll(m.substr(0, dot)) * kScale;
  if (dot != std::string::npos) {
    std::string f = m.substr(dot + 1);
    f.resize(3, '0');
    v += std::stoll(f);
  }
  return neg ? -v : v;
}

// v / kScale as JSON writes it (no trailing zeros).
std::string Text(int64_t v) {
  const bool neg = v < 0;
  const int64_t a = neg ? -v : v;
  std::string out = (neg ? "-" : "") + std::to_string(a / kScale);
  if (a % kScale != 0) {
    std::string f = std::to_string(a % kScale);
    f.insert(0, 3 - f.size(), '0');
    while (f.back() == '0') f.pop_back();
    out += "." + f;
  }
  return out;
}

int FractionDigits(const std::string& s) {
  const size_t dot = s.find('.');
  return dot == std::string::npos ? 0 : static_cast<int>(s.size() - dot - 1);
}

struct Case {
  const char* step;
  bool integer;
  std::optional<NumberBound> lo, hi;
};

std::string Describe(const Case& c) {
  return std::string(c.integer ? "integer" : "number") + " multipleOf " + c.step + " in " +
         (c.lo ? (c.lo->exclusive ? "(" : "[") + c.lo->value : "(-inf") + ", " +
         (c.hi ? c.hi->value + (c.hi->exclusive ? ")" : "]") : "inf)");
}

std::string Grammar(const Case& c) {
  auto rules = MultipleOfGrammar("n", c.step, c.integer, c.lo, c.hi);
  EXPECT_TRUE(rules.ok()) << Describe(c) << ": " << rules.status().ToString();
  return "root ::= n\n" + (rules.ok() ? *rules : std::string());
}

TEST(MultipleOfGrammar, AdmitsExactlyTheMultiplesWithinTheBounds) {
  const NumberBound zero{"0"}, above_zero{"0", true};
  const std::vector<Case> cases = {
      // Powers of ten: fraction digits capped.
      {"0.01", false, {}, {}},
      {"0.1", false, NumberBound{"-2.5"}, NumberBound{"3", true}},
      {"1", false, zero, {}},
      {"0.5", true, {}, {}},  // every integer
      // Listed between two bounds.
      {"0.25", false, NumberBound{"-1.3"}, NumberBound{"2.6"}},
      {"5", true, zero, NumberBound{"100"}},
      {"3", false, NumberBound{"-10", true}, NumberBound{"10", true}},
      {"2.5", true, NumberBound{"-20"}, NumberBound{"19.9"}},
      {"0.007", false, NumberBound{"0.001"}, NumberBound{"0.1"}},
      // Read by remainders: no upper bound.
      {"5", true, {}, {}},
      {"7", true, zero, {}},
      {"3", true, above_zero, {}},
      {"0.05", false, {}, {}},
      {"0.25", false, zero, {}},
      {"0.75", false, above_zero, {}},
      {"12", false, NumberBound{"-3"}, {}},  // from -3: the multiples from 0
      {"2.5", true, {}, {}},                 // the integers that are multiples of 5
      // A larger minimum, no maximum: listed below the next power of ten,
      // by remainder above it.
      {"3", true, NumberBound{"4"}, {}},
      {"5", true, NumberBound{"10"}, {}},
      {"0.25", false, NumberBound{"7.3"}, {}},
      {"4", false, NumberBound{"3", true}, {}},
  };
  for (const Case& c : cases) {
    Matcher m(Grammar(c));
    Decimal step;
    ASSERT_TRUE(ParseDecimal(c.step, &step));
    int64_t step_scaled = 0;
    for (char ch : step.integer + step.fraction) step_scaled = step_scaled * 10 + (ch - '0');
    for (size_t i = step.fraction.size(); i < 3; ++i) step_scaled *= 10;
    const int step_digits = static_cast<int>(step.fraction.size());
    const int64_t lo = c.lo ? Scaled(c.lo->value) : INT64_MIN;
    const int64_t hi = c.hi ? Scaled(c.hi->value) : INT64_MAX;
    int admitted = 0;
    for (int64_t v = -25 * kScale; v <= 25 * kScale; v += 1) {
      const std::string text = Text(v);
      const bool fits = c.integer ? FractionDigits(text) == 0 : FractionDigits(text) <= step_digits;
      const bool in = (c.lo && c.lo->exclusive ? v > lo : v >= lo) &&
                      (c.hi && c.hi->exclusive ? v < hi : v <= hi);
      const bool want = fits && in && v % step_scaled == 0;
      ASSERT_EQ(m(text), want) << Describe(c) << ": " << text;
      admitted += want;
    }
    EXPECT_GT(admitted, 0) << Describe(c);
    // Forms it never writes.
    for (const char* bad : {"1e1", "01", "+5", "5.", ".5", "- 5", "0x5"}) {
      EXPECT_FALSE(m(bad)) << Describe(c) << ": " << bad;
    }
  }
}

TEST(MultipleOfGrammar, LargeValuesFollowTheirRemainder) {
  Matcher m(Grammar({"7", true, {}, {}}));
  EXPECT_TRUE(m("700000000000000000000007"));  // 7 × (10^23 + 1)
  EXPECT_FALSE(m("700000000000000000000008"));
  EXPECT_TRUE(m("-123456789012345678901235"));  // 7 × 17636684144620811271605
  EXPECT_FALSE(m("-123456789012345678901234"));
  Matcher cents(Grammar({"0.05", false, NumberBound{"0"}, {}}));
  EXPECT_TRUE(cents("12345678901.95"));
  EXPECT_TRUE(cents("3.10"));  // a trailing zero: still two digits
  EXPECT_FALSE(cents("3.101"));
  EXPECT_FALSE(cents("-0.05"));
  Matcher from_ten(Grammar({"5", true, NumberBound{"10"}, {}}));
  for (const char* yes : {"10", "95", "100", "105", "1000000005"})
    EXPECT_TRUE(from_ten(yes)) << yes;
  for (const char* no : {"0", "5", "101", "1000000004", "0100"}) EXPECT_FALSE(from_ten(no)) << no;
  Matcher positive(Grammar({"0.5", false, NumberBound{"0", true}, {}}));
  for (const char* zero : {"0", "0.0"}) EXPECT_FALSE(positive(zero)) << zero;
  EXPECT_TRUE(positive("0.5"));
}

TEST(MultipleOfGrammar, RefusesWhatItCannotKeepSayingWhy) {
  struct Bad {
    Case c;
    const char* words;
  };
  for (const Bad& b : {
           Bad{{"0", false, {}, {}}, "above 0"},
           Bad{{"-5", true, {}, {}}, "above 0"},
           Bad{{"1e-20", false, {}, {}}, "at most 15 fraction digits"},
           Bad{{"5", true, NumberBound{"1"}, NumberBound{"4"}}, "no multipleOf 5 lies within"},
           Bad{{"0.3", false, NumberBound{"0.4"}, NumberBound{"0.5"}}, "no multipleOf 0.3"},
           Bad{{"0.01", false, NumberBound{"0.001"}, NumberBound{"0.009"}}, "no multipleOf 0.01"},
           Bad{{"3", true, NumberBound{"1"}, NumberBound{"100000"}}, "more than 10000 multiples"},
           Bad{{"3", true, NumberBound{"-4"}, {}}, "with these bounds"},
           Bad{{"3", true, NumberBound{"100000"}, {}}, "with these bounds"},
           Bad{{"3", true, {}, NumberBound{"10"}}, "with these bounds"},
           Bad{{"1009", true, {}, {}}, "needs 1009 remainder states"},
           Bad{{"0.0000000000999", false, {}, {}}, "needs 13986 remainder states"},
           Bad{{"5", true, NumberBound{"1e20"}, {}}, "out of range"},
       }) {
    auto r = MultipleOfGrammar("n", b.c.step, b.c.integer, b.c.lo, b.c.hi);
    ASSERT_FALSE(r.ok()) << Describe(b.c);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(b.words), std::string::npos)
        << Describe(b.c) << ": " << r.status().message() << "\nwanted: " << b.words;
  }
}

// The largest rules it makes stay quick to parse and cheap per character.
TEST(MultipleOfGrammar, TheLargestRulesStayCheap) {
  for (const Case& c :
       {Case{"0.03", false, NumberBound{"0"}, NumberBound{"299.99"}},             // 10,000
        Case{"997", true, {}, {}}, Case{"0.33", false, NumberBound{"0"}, {}}}) {  // 33 × 3 states
    const std::string g = Grammar(c);
    const auto start = std::chrono::steady_clock::now();
    Matcher m(g);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(ms, 2000) << Describe(c) << ": " << g.size() << " bytes";
    EXPECT_LT(g.size(), 400000u) << Describe(c);
    EXPECT_TRUE(m(c.integer ? "1994" : "299.97")) << Describe(c);
    std::printf("%s: %zu bytes of grammar, parsed in %.1f ms\n", Describe(c).c_str(), g.size(), ms);
  }
}

}  // namespace
}  // namespace outpost::engine

#include "outpost/engine/number_range_grammar.h"

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <vector>

namespace outpost::engine {
namespace {

constexpr int kMaxIntegerDigits = 16;  // as llama.cpp's integral-part
constexpr int kMaxBoundDigits = 15;    // a bound's magnitude < 10^15

}  // namespace

bool ParseDecimal(const std::string& text, Decimal* out) {
  size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) negative = text[i++] == '-';
  std::string digits;
  int point = -1;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digits += c;
    } else if (c == '.' && point < 0) {
      point = static_cast<int>(digits.size());
    } else {
      break;
    }
  }
  if (digits.empty()) return false;
  if (point < 0) point = static_cast<int>(digits.size());
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    const size_t start = i;
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
    if (i == text.size() || text.size() - i > 3) return false;  // no digits, or |exp| > 999
    for (size_t j = i; j < text.size(); ++j) {
      if (!std::isdigit(static_cast<unsigned char>(text[j]))) return false;
    }
    point += std::atoi(text.c_str() + start);
    i = text.size();
  }
  if (i != text.size()) return false;
  // Digits before the point and after it, padded with zeros either side.
  if (point < 0) {
    digits.insert(0, static_cast<size_t>(-point), '0');
    point = 0;
  }
  if (point > static_cast<int>(digits.size())) {
    digits.append(static_cast<size_t>(point) - digits.size(), '0');
  }
  std::string integer = digits.substr(0, static_cast<size_t>(point));
  std::string fraction = digits.substr(static_cast<size_t>(point));
  const size_t first = integer.find_first_not_of('0');
  integer = first == std::string::npos ? "0" : integer.substr(first);
  const size_t last = fraction.find_last_not_of('0');
  fraction = last == std::string::npos ? "" : fraction.substr(0, last + 1);
  if (integer.size() > static_cast<size_t>(kMaxBoundDigits)) return false;
  if (fraction.size() > static_cast<size_t>(kMaxFractionDigits)) return false;
  out->integer = integer;
  out->fraction = fraction;
  out->negative = negative && !out->zero();
  return true;
}

namespace {

std::string Literal(const std::string& s) {
  return "\"" + s + "\"";
}

std::string Class(int from, int to) {
  if (from == to) return Literal(std::string(1, static_cast<char>('0' + from)));
  return "[" + std::string(1, static_cast<char>('0' + from)) + "-" +
         std::string(1, static_cast<char>('0' + to)) + "]";
}

std::string AnyDigits(int min, int max) {
  if (max == 0) return "";
  return "[0-9]{" + std::to_string(min) + "," + std::to_string(max) + "}";
}

std::string Join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += sep;
    out += p;
  }
  return out;
}

// The integers of one digit count from a to b (strings of equal length,
// a <= b), as GBNF sequences: the classic range-to-pattern split.
std::vector<std::string> SameLength(const std::string& a, const std::string& b) {
  const int a0 = a[0] - '0', b0 = b[0] - '0';
  if (a.size() == 1) return {Class(a0, b0)};
  const std::string ar = a.substr(1), br = b.substr(1);
  const int rest = static_cast<int>(ar.size());
  std::vector<std::string> out;
  if (a0 == b0) {
    for (const auto& p : SameLength(ar, br)) out.push_back(Class(a0, a0) + " " + p);
    return out;
  }
  const bool a_zeros = ar.find_first_not_of('0') == std::string::npos;
  const bool b_nines = br.find_first_not_of('9') == std::string::npos;
  int from = a0, to = b0;
  if (!a_zeros) {
    for (const auto& p : SameLength(ar, std::string(ar.size(), '9'))) {
      out.push_back(Class(a0, a0) + " " + p);
    }
    from = a0 + 1;
  }
  std::vector<std::string> tail;
  if (!b_nines) {
    for (const auto& p : SameLength(std::string(br.size(), '0'), br)) {
      tail.push_back(Class(b0, b0) + " " + p);
    }
    to = b0 - 1;
  }
  if (from <= to) out.push_back(Class(from, to) + " " + AnyDigits(rest, rest));
  out.insert(out.end(), tail.begin(), tail.end());
  return out;
}

// One side of a fraction's range while its digits are read: `digits` are
// the bound's digits still to match (none: the bound's remainder is 0);
// inactive once an earlier digit settled the comparison.
struct Side {
  bool active = false;
  std::string digits;
  bool strict = false;

  std::string Key() const { return active ? digits + (strict ? "<" : "=") : "-"; }
};

// Both sides after a digit; ok false if the digit puts the number out.
struct Next {
  bool ok = false;
  Side lo, hi;
};

class Builder {
 public:
  Builder(std::string name, int max_fraction)
      : name_(std::move(name)), max_fraction_(max_fraction) {}

  // The integers in [m, M] (M absent: up to kMaxIntegerDigits digits), as
  // an expression; "" if there are none.
  std::string IntRange(uint64_t m, std::optional<uint64_t> M) {
    if (M && m > *M) return "";
    std::vector<std::string> alts;
    const std::string ms = std::to_string(m);
    const int top = M ? static_cast<int>(std::to_string(*M).size()) : kMaxIntegerDigits;
    for (int len = static_cast<int>(ms.size()); len <= top; ++len) {
      std::string lo = len == static_cast<int>(ms.size()) ? ms : "1" + std::string(len - 1, '0');
      std::string hi = std::string(static_cast<size_t>(len), '9');
      if (M && len == top) hi = std::to_string(*M);
      if (!M && len > static_cast<int>(ms.size())) {
        // Every longer integer, in one piece.
        alts.push_back("[1-9] " + AnyDigits(len - 1, kMaxIntegerDigits - 1));
        break;
      }
      for (auto& p : SameLength(lo, hi)) alts.push_back(std::move(p));
    }
    if (alts.size() == 1) return alts[0];
    return Rule(Join(alts, " | "));
  }

  // Non-empty fraction digits (at most n) within lo and hi, as an
  // expression; nullopt if none.
  std::optional<std::string> Fraction(Side lo, Side hi, int n) {
    if (n <= 0) return std::nullopt;
    Settle(lo);
    if (!lo.active && !hi.active) return AnyDigits(1, n);
    const std::string key = lo.Key() + "|" + hi.Key() + "|" + std::to_string(n);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    std::vector<Next> next(10);
    for (int d = 0; d <= 9; ++d) next[static_cast<size_t>(d)] = Step(lo, hi, d);
    std::vector<std::string> alts;
    for (int d = 0; d <= 9;) {
      int e = d;
      const Next& x = next[static_cast<size_t>(d)];
      while (e + 1 <= 9) {
        const Next& y = next[static_cast<size_t>(e + 1)];
        if (y.ok != x.ok || y.lo.Key() != x.lo.Key() || y.hi.Key() != x.hi.Key()) break;
        ++e;
      }
      if (x.ok) {
        const bool stop = AcceptsZero(x.lo, x.hi);
        std::optional<std::string> more;
        if (n > 1) more = Fraction(x.lo, x.hi, n - 1);
        if (stop || more) {
          std::string alt = Class(d, e);
          if (more) alt += stop ? " (" + *more + ")?" : " " + *more;
          alts.push_back(std::move(alt));
        }
      }
      d = e + 1;
    }
    std::optional<std::string> out;
    if (!alts.empty()) out = alts.size() == 1 ? alts[0] : Rule(Join(alts, " | "));
    memo_[key] = out;
    return out;
  }

  // What follows an integer part: nothing, or "." and fraction digits within
  // lo and hi, as an expression ("" = nothing); nullopt if neither fits.
  std::optional<std::string> AfterInteger(Side lo, Side hi) {
    Settle(lo);
    const bool stop = AcceptsZero(lo, hi);
    auto more = Fraction(lo, hi, max_fraction_);
    if (!more) return stop ? std::optional<std::string>("") : std::nullopt;
    const std::string dot = "\".\" " + *more;
    return stop ? "(" + dot + ")?" : dot;
  }

  // Magnitudes (plain decimals, no sign) from lo to hi (absent: open).
  std::optional<std::string> Magnitude(const Decimal& lo, bool lo_strict,
                                       const std::optional<Decimal>& hi, bool hi_strict) {
    const Side lo_side{true, lo.fraction, lo_strict};
    const Side hi_side = hi ? Side{true, hi->fraction, hi_strict} : Side{};
    const uint64_t a = std::stoull(lo.integer);
    std::vector<std::string> alts;
    auto add = [&](const std::string& integer, const std::optional<std::string>& after) {
      if (integer.empty() || !after) return;
      alts.push_back(after->empty() ? integer : integer + " " + *after);
    };
    const std::string any_fraction =
        max_fraction_ == 0 ? "" : "(\".\" " + AnyDigits(1, max_fraction_) + ")?";
    if (!hi) {
      add(Literal(lo.integer), AfterInteger(lo_side, Side{}));
      add(IntRange(a + 1, std::nullopt), any_fraction);
    } else {
      const uint64_t b = std::stoull(hi->integer);
      if (a > b) return std::nullopt;
      if (a == b) {
        add(Literal(lo.integer), AfterInteger(lo_side, hi_side));
      } else {
        add(Literal(lo.integer), AfterInteger(lo_side, Side{}));
        if (a + 1 <= b - 1) add(IntRange(a + 1, b - 1), any_fraction);
        add(Literal(hi->integer), AfterInteger(Side{}, hi_side));
      }
    }
    if (alts.empty()) return std::nullopt;
    return alts.size() == 1 ? alts[0] : "(" + Join(alts, " | ") + ")";
  }

  std::string Text(const std::string& root_body) const {
    std::string out = name_ + " ::= " + root_body + "\n";
    for (const auto& r : rules_) out += r + "\n";
    return out;
  }

 private:
  // A lower side that any remainder meets (>= 0) is settled.
  static void Settle(Side& lo) {
    if (lo.active && lo.digits.empty() && !lo.strict) lo.active = false;
  }

  // Whether no further digits (a remainder of 0) meet both sides.
  static bool AcceptsZero(const Side& lo, const Side& hi) {
    const bool lo_ok = !lo.active || (lo.digits.empty() && !lo.strict);
    const bool hi_ok = !hi.active || !hi.digits.empty() || !hi.strict;
    return lo_ok && hi_ok;
  }

  // Both sides after reading digit d; !ok if a side fails.
  static Next Step(const Side& lo, const Side& hi, int d) {
    Next n;
    n.lo = lo;
    n.hi = hi;
    if (lo.active) {
      const int a = lo.digits.empty() ? 0 : lo.digits[0] - '0';
      if (d < a) return n;
      if (d > a) {
        n.lo = Side{};
      } else {
        n.lo.digits = lo.digits.empty() ? "" : lo.digits.substr(1);
        Settle(n.lo);
      }
    }
    if (hi.active) {
      const int b = hi.digits.empty() ? 0 : hi.digits[0] - '0';
      if (d > b) return n;
      if (d < b) {
        n.hi = Side{};
      } else {
        n.hi.digits = hi.digits.empty() ? "" : hi.digits.substr(1);
      }
    }
    n.ok = true;
    return n;
  }

  std::string Rule(const std::string& body) {
    const std::string name = name_ + "-" + std::to_string(rules_.size() + 1);
    rules_.push_back(name + " ::= " + body);
    return name;
  }

  const std::string name_;
  const int max_fraction_;  // fraction digits, at most (0: integers)
  std::vector<std::string> rules_;
  std::map<std::string, std::optional<std::string>> memo_;
};

}  // namespace

StatusOr<std::string> NumberRangeGrammar(const std::string& name,
                                         const std::optional<NumberBound>& lo,
                                         const std::optional<NumberBound>& hi,
                                         int max_fraction_digits) {
  std::optional<Decimal> l, h;
  for (auto [bound, out] : {std::pair{&lo, &l}, std::pair{&hi, &h}}) {
    if (!*bound) continue;
    Decimal d;
    if (!ParseDecimal((*bound)->value, &d)) {
      return Status::InvalidArgument(
          "bound " + (*bound)->value +
          " is out of range: a number bound must be below 10^15 in magnitude with at most " +
          std::to_string(kMaxFractionDigits) + " fraction digits");
    }
    *out = d;
  }
  const bool lo_strict = lo && lo->exclusive, hi_strict = hi && hi->exclusive;
  Builder g(name, max_fraction_digits);
  std::vector<std::string> alts;
  const Decimal zero;
  // x >= 0.
  const bool hi_negative = h && h->negative;
  if (!hi_negative && !(h && h->zero() && hi_strict)) {
    const bool from_lo = l && !l->negative;
    if (auto m = g.Magnitude(from_lo ? *l : zero, from_lo && lo_strict, h, hi_strict)) {
      alts.push_back(*m);
    }
  }
  // x < 0: |x| from |hi| (or just above 0) to |lo| (or open).
  if (!l || l->negative) {
    Decimal from = zero;
    bool from_strict = true;
    if (hi_negative) {
      from = *h;
      from_strict = hi_strict;
    }
    std::optional<Decimal> to = l;
    if (auto m = g.Magnitude(from, from_strict, to, lo_strict)) alts.push_back("\"-\" " + *m);
  }
  if (alts.empty()) return Status::InvalidArgument("no number lies within its bounds");
  return g.Text(Join(alts, " | "));
}

}  // namespace outpost::engine

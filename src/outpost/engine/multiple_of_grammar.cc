#include "outpost/engine/multiple_of_grammar.h"

#include <map>
#include <memory>
#include <vector>

namespace outpost::engine {
namespace {

using Int = __int128;

Int Pow10(int n) {
  Int p = 1;
  for (int i = 0; i < n; ++i) p *= 10;
  return p;
}

Int Gcd(Int a, Int b) {
  while (b != 0) {
    const Int t = a % b;
    a = b;
    b = t;
  }
  return a;
}

// Floor and ceiling of a / b for b > 0.
Int FloorDiv(Int a, Int b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

Int CeilDiv(Int a, Int b) {
  return -FloorDiv(-a, b);
}

std::string ToString(Int v) {
  if (v == 0) return "0";
  const bool neg = v < 0;
  std::string s;
  for (Int a = neg ? -v : v; a > 0; a /= 10) s.insert(s.begin(), static_cast<char>('0' + a % 10));
  return neg ? "-" + s : s;
}

// A decimal's digits as an integer (its value × 10^fraction.size()).
Int Digits(const Decimal& d) {
  Int v = 0;
  for (char c : d.integer + d.fraction) v = v * 10 + (c - '0');
  return d.negative ? -v : v;
}

// The smallest (lower) or largest (upper) integer n with n / 10^scale on the
// bound's side of it.
Int Scaled(const Decimal& d, bool exclusive, int scale, bool lower) {
  const int f = static_cast<int>(d.fraction.size());
  const Int v = Digits(d);
  if (f <= scale) {
    const Int s = v * Pow10(scale - f);  // exact
    return exclusive ? (lower ? s + 1 : s - 1) : s;
  }
  const Int p = Pow10(f - scale);
  const bool exact = v % p == 0;
  if (lower) return exact && exclusive ? v / p + 1 : CeilDiv(v, p);
  return exact && exclusive ? v / p - 1 : FloorDiv(v, p);
}

// v / 10^scale as JSON writes it: no trailing zeros, no "-0".
std::string Text(Int v, int scale) {
  const bool neg = v < 0;
  std::string digits = ToString(neg ? -v : v);
  if (scale > 0) {
    if (digits.size() <= static_cast<size_t>(scale)) {
      digits.insert(0, static_cast<size_t>(scale) + 1 - digits.size(), '0');
    }
    digits.insert(digits.size() - static_cast<size_t>(scale), ".");
    while (digits.back() == '0') digits.pop_back();
    if (digits.back() == '.') digits.pop_back();
  }
  return neg ? "-" + digits : digits;
}

std::string Literal(const std::string& s) {
  return "\"" + s + "\"";
}

std::string Join(const std::vector<std::string>& alts) {
  std::string out;
  for (const auto& a : alts) out += (out.empty() ? "" : " | ") + a;
  return out;
}

// Texts as a trie: one GBNF expression, each node a group of its
// continuations (optional where a text ends there), runs of single
// continuations one literal.
class Trie {
 public:
  void Add(const std::string& s) {
    Node* n = &root_;
    for (char c : s) {
      auto& child = n->next[c];
      if (!child) child = std::make_unique<Node>();
      n = child.get();
    }
    n->end = true;
  }

  std::string Expression() const { return Body(root_); }

 private:
  struct Node {
    std::map<char, std::unique_ptr<Node>> next;
    bool end = false;
  };

  // What may follow `n`; REQUIRES n has continuations.
  static std::string Body(const Node& n) {
    std::vector<std::string> alts;
    for (const auto& [c, child] : n.next) {
      std::string run(1, c);
      const Node* at = child.get();
      while (!at->end && at->next.size() == 1) {
        run += at->next.begin()->first;
        at = at->next.begin()->second.get();
      }
      std::string alt = Literal(run);
      if (!at->next.empty()) alt += " " + Group(*at);
      alts.push_back(std::move(alt));
    }
    return Join(alts);
  }

  // `n`'s continuations as one factor: a group, optional if a text ends at n.
  static std::string Group(const Node& n) { return "(" + Body(n) + ")" + (n.end ? "?" : ""); }

  Node root_;
};

// Digits read by their remainder: plain decimals (no sign) with at most
// `scale` fraction digits whose value × 10^scale is a multiple of k.
// `positive`: zero (0, 0.0, …) left out.
class Remainders {
 public:
  // `min_digits`: the integer part has at least that many digits (0 or 1:
  // any; above 1, "0" is not one of them).
  Remainders(std::string name, int64_t k, int scale, bool positive, int min_digits = 0)
      : name_(std::move(name)),
        k_(k),
        scale_(scale),
        positive_(positive),
        min_digits_(std::max(1, min_digits)) {}

  std::string Expression() {
    // The first digit: "0" (then the fraction at once) or 1-9.
    std::vector<std::string> alts;
    const std::string after_zero = positive_ ? ZeroFraction(0) : AfterInteger(0);
    if (min_digits_ == 1 && (!after_zero.empty() || !positive_)) {
      alts.push_back(after_zero.empty() ? "\"0\"" : "\"0\" " + after_zero);
    }
    for (const auto& [digits, target] : Transitions(0, 1)) {
      alts.push_back(digits + " " + Integer(target, 1));
    }
    return Join(alts);
  }

  std::string Rules() const {
    std::string out;
    for (const auto& r : rules_) out += r + "\n";
    return out;
  }

 private:
  // Digit classes by the remainder they lead to from r (digits from `from`).
  std::vector<std::pair<std::string, int64_t>> Transitions(int64_t r, int from) const {
    std::map<int64_t, std::vector<int>> by_target;
    for (int d = from; d <= 9; ++d) by_target[(r * 10 + d) % k_].push_back(d);
    std::vector<std::pair<std::string, int64_t>> out;
    for (const auto& [target, digits] : by_target) {
      std::string cls = "[";
      for (int d : digits) cls += static_cast<char>('0' + d);
      out.emplace_back(digits.size() == 1 ? Literal(std::string(1, cls[1])) : cls + "]", target);
    }
    return out;
  }

  // Whether a value whose digits so far leave r, with `left` fraction digits
  // still free, can end a multiple (the rest padded with zeros included).
  bool Live(int64_t r, int left) const {
    const Int base = static_cast<Int>(r) * Pow10(left) % k_;
    return base == 0 || static_cast<Int>(k_) - base < Pow10(left);
  }

  bool Accepts(int64_t r, int left) const { return static_cast<Int>(r) * Pow10(left) % k_ == 0; }

  std::string Rule(const std::string& key, const std::string& body) {
    if (auto it = names_.find(key); it != names_.end()) return it->second;
    const std::string name = name_ + "-" + std::to_string(rules_.size() + 1);
    names_[key] = name;
    rules_.push_back(name + " ::= " + body);
    return name;
  }

  // The integer part's digits after the first: remainder r and `count`
  // digits so far (counted up to min_digits_).
  std::string Integer(int64_t r, int count) {
    const std::string key = "i" + std::to_string(r) + "." + std::to_string(count);
    if (auto it = names_.find(key); it != names_.end()) return it->second;
    const std::string name = name_ + "-" + std::to_string(rules_.size() + 1);
    names_[key] = name;
    rules_.push_back("");  // filled below: the rule may refer to itself
    const size_t at = rules_.size() - 1;
    std::vector<std::string> alts;
    for (const auto& [digits, target] : Transitions(r, 0)) {
      alts.push_back(digits + " " + Integer(target, std::min(count + 1, min_digits_)));
    }
    const std::string after = AfterInteger(r);
    std::string body = Join(alts);
    // Ending here: nothing more, or the fraction.
    if (count < min_digits_) {
      // Too short to end yet.
    } else if (Accepts(r, scale_)) {
      body += " | " + (after.empty() ? std::string("\"\"") : after);
    } else if (!after.empty()) {
      body += " | " + after;
    }
    rules_[at] = name + " ::= " + body;
    return name;
  }

  // After the integer part (remainder r): "" = nothing may follow (ending
  // there is the caller's to allow); else "." and fraction digits, optional
  // when the integer alone is a multiple.
  std::string AfterInteger(int64_t r) {
    if (scale_ == 0) return "";
    const std::string digits = Fraction(r, 0);
    if (digits.empty()) return "";
    const std::string dot = "\".\" " + digits;
    return Accepts(r, scale_) ? "(" + dot + ")?" : dot;
  }

  // The next fraction digit and what follows it, `written` digits read, r so
  // far; "" if no digit leads on to a multiple.
  std::string Fraction(int64_t r, int written) {
    if (written >= scale_) return "";
    const std::string key = "f" + std::to_string(r) + "." + std::to_string(written);
    if (auto it = names_.find(key); it != names_.end()) return it->second;
    std::vector<std::string> alts;
    for (const auto& [digits, target] : Transitions(r, 0)) {
      AddDigit(digits, target, written + 1, &alts);
    }
    return Alternatives(key, alts);
  }

  // Positive only, after an integer part "0": "." and fraction digits with
  // at least one not zero; "" if none can follow.
  std::string ZeroFraction(int written) {
    if (written == 0) {
      const std::string digits = ZeroFraction(1);
      return digits.empty() ? "" : "\".\" " + digits;
    }
    // The `written`-th digit: a zero keeps it zero so far; any other goes
    // on as an ordinary fraction.
    if (written > scale_) return "";
    const std::string key = "z" + std::to_string(written);
    if (auto it = names_.find(key); it != names_.end()) return it->second;
    std::vector<std::string> alts;
    const std::string zeros = ZeroFraction(written + 1);
    if (!zeros.empty()) alts.push_back("\"0\" " + zeros);
    for (const auto& [digits, target] : Transitions(0, 1)) AddDigit(digits, target, written, &alts);
    return Alternatives(key, alts);
  }

  // A fraction digit class leading to remainder `target`, `written` digits
  // read with it, and what may follow it: added to `alts` unless no
  // multiple lies that way.
  void AddDigit(const std::string& digits, int64_t target, int written,
                std::vector<std::string>* alts) {
    const int left = scale_ - written;
    if (!Live(target, left)) return;
    const std::string more = Fraction(target, written);
    const bool stop = Accepts(target, left);
    if (more.empty() && !stop) return;
    alts->push_back(more.empty() ? digits
                    : stop       ? digits + " (" + more + ")?"
                                 : digits + " " + more);
  }

  // `alts` as the rule `key` names; "" (remembered) when there are none.
  std::string Alternatives(const std::string& key, const std::vector<std::string>& alts) {
    if (alts.empty()) return names_[key] = "";
    return Rule(key, Join(alts));
  }

  const std::string name_;
  const int64_t k_;
  const int scale_;
  const bool positive_;
  const int min_digits_;
  std::vector<std::string> rules_;
  std::map<std::string, std::string> names_;
};

Status Refused(const std::string& why) {
  return Status::InvalidArgument(why);
}

}  // namespace

StatusOr<std::string> MultipleOfGrammar(const std::string& name, const std::string& step_text,
                                        bool integer, const std::optional<NumberBound>& lo,
                                        const std::optional<NumberBound>& hi) {
  Decimal step;
  if (!ParseDecimal(step_text, &step) || step.negative || step.zero()) {
    return Refused("multipleOf must be a number above 0, below 10^15, with at most " +
                   std::to_string(kMaxFractionDigits) + " fraction digits; got " + step_text);
  }
  // step = k0 × 10^e, k0 not a multiple of 10.
  Int k0 = Digits(step);
  int e = -static_cast<int>(step.fraction.size());
  while (k0 % 10 == 0) {
    k0 /= 10;
    ++e;
  }
  // Admitted: n / 10^scale with n a multiple of k (n an integer).
  const int scale = integer ? 0 : std::max(0, -e);
  Int k = e >= 0 ? k0 * Pow10(e) : k0;  // for a number, scale = -e here
  if (integer && e < 0) k = k0 / Gcd(k0, Pow10(-e));
  const std::string what = "multipleOf " + step_text;
  if (k == 1) {
    auto rules = NumberRangeGrammar(name, lo, hi, scale);
    if (!rules.ok() && rules.status().message().rfind("no number", 0) == 0) {
      return Refused("no " + what + " lies within its bounds");
    }
    return rules;
  }

  std::optional<Decimal> l, h;
  for (auto [bound, out] : {std::pair{&lo, &l}, std::pair{&hi, &h}}) {
    if (!*bound) continue;
    Decimal d;
    if (!ParseDecimal((*bound)->value, &d)) {
      return Refused("bound " + (*bound)->value +
                     " is out of range: a number bound must be below 10^15 in magnitude with at "
                     "most " +
                     std::to_string(kMaxFractionDigits) + " fraction digits");
    }
    *out = d;
  }
  // The first and last multiples within the bounds, scaled.
  std::optional<Int> first, last;
  if (l) first = CeilDiv(Scaled(*l, lo->exclusive, scale, /*lower=*/true), k) * k;
  if (h) last = FloorDiv(Scaled(*h, hi->exclusive, scale, /*lower=*/false), k) * k;
  if (first && last) {
    if (*first > *last) return Refused("no " + what + " lies within its bounds");
    const Int count = (*last - *first) / k + 1;
    if (count <= kMaxListedMultiples) {
      Trie trie;
      for (Int v = *first; v <= *last; v += k) trie.Add(Text(v, scale));
      return name + " ::= " + trie.Expression() + "\n";
    }
  }
  const bool from_zero = !last && (!first || *first == 0 || *first == k);
  // From a larger first multiple F with D integer digits: those up to the
  // next power of ten listed, and the longer ones by their remainder.
  int digits = 0;
  Int listed = 0;
  if (!last && !from_zero && *first > 0) {
    digits = static_cast<int>(ToString(*first / Pow10(scale)).size());
    const Int top = Pow10(digits + scale) - 1;  // the largest value with D digits, scaled
    listed = FloorDiv(top, k) * k >= *first ? (FloorDiv(top, k) * k - *first) / k + 1 : 0;
  }
  const bool from_first = digits > 0 && listed <= kMaxListedMultiples;
  const Int states = k * (scale + 1) + (from_first ? k * digits : 0);
  const bool shape = from_zero || from_first;
  if (!shape || states > kMaxRemainderStates) {
    return Refused(what +
                   (first && last ? " has more than " + std::to_string(kMaxListedMultiples) +
                                        " multiples within its bounds"
                    : !shape ? " with these bounds"
                             : " needs " + ToString(states) + " remainder states") +
                   ", past what Outpost's grammar rule follows: it lists up to " +
                   std::to_string(kMaxListedMultiples) +
                   " multiples between two bounds, or reads the digits by their remainder (at "
                   "most " +
                   std::to_string(kMaxRemainderStates) +
                   " states: the step over its smallest digit, times the fraction digits plus "
                   "one, plus that times the minimum's integer digits) with no upper bound and "
                   "no lower one, a lower one of 0 or just above, or one below whose next power "
                   "of ten lie at most " +
                   std::to_string(kMaxListedMultiples) + " multiples");
  }
  if (from_first) {
    Trie trie;
    for (Int v = *first; v < Pow10(digits + scale); v += k) trie.Add(Text(v, scale));
    Remainders longer(name, static_cast<int64_t>(k), scale, /*positive=*/true, digits + 1);
    const std::string body =
        listed > 0 ? trie.Expression() + " | " + longer.Expression() : longer.Expression();
    return name + " ::= " + body + "\n" + longer.Rules();
  }
  Remainders r(name, static_cast<int64_t>(k), scale, first && *first == k);
  const std::string magnitude = r.Expression();
  // No lower bound: negative multiples too ("-0" is 0, a multiple).
  const std::string body = first ? magnitude : "\"-\"? (" + magnitude + ")";
  return name + " ::= " + body + "\n" + r.Rules();
}

}  // namespace outpost::engine

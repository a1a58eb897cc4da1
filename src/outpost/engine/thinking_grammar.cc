#include "outpost/engine/thinking_grammar.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string_view>
#include <vector>

namespace outpost::engine {
namespace {

std::vector<uint32_t> CodePoints(const std::string& s) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    const int n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xe ? 3 : 4;
    uint32_t c = n == 1 ? b : n == 2 ? (b & 0x1f) : n == 3 ? (b & 0x0f) : (b & 0x07);
    for (int k = 1; k < n && i + k < s.size(); ++k) {
      c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
    }
    out.push_back(c);
    i += static_cast<size_t>(n);
  }
  return out;
}

// One code point as a GBNF escape, valid in literals and character classes.
std::string Escape(uint32_t c) {
  char buf[16];
  if (c < 0x10000) {
    std::snprintf(buf, sizeof(buf), "\\u%04X", c);
  } else {
    std::snprintf(buf, sizeof(buf), "\\U%08X", c);
  }
  return buf;
}

std::string Class(const std::set<uint32_t>& chars, bool negate) {
  std::string s = negate ? "[^" : "[";
  for (uint32_t c : chars) s += Escape(c);
  return s + "]";
}

std::string Literal(const std::string& text) {
  std::string s = "\"";
  for (uint32_t c : CodePoints(text)) s += Escape(c);
  return s + "\"";
}

}  // namespace

std::string UntilRules(const std::string& name, const std::string& end) {
  const std::vector<uint32_t> e = CodePoints(end);
  const size_t m = e.size();
  // KMP failure function: fail[q] = the longest proper border of e[0..q).
  std::vector<size_t> fail(m + 1, 0);
  for (size_t q = 2; q <= m; ++q) {
    size_t k = fail[q - 1];
    while (k > 0 && e[k] != e[q - 1]) k = fail[k];
    if (e[k] == e[q - 1]) ++k;
    fail[q] = k;
  }
  auto next = [&](size_t q, uint32_t c) {
    while (q > 0 && (q == m || e[q] != c)) q = fail[q];
    return e[q] == c ? q + 1 : 0;
  };
  const std::set<uint32_t> alphabet(e.begin(), e.end());
  auto state = [&](size_t q) { return q == 0 ? name : name + "-" + std::to_string(q); };
  std::string rules;
  for (size_t q = 0; q < m; ++q) {
    std::map<size_t, std::set<uint32_t>> to;  // destination → the code points that lead there
    for (uint32_t c : alphabet) to[next(q, c)].insert(c);
    std::string rhs;
    for (const auto& [d, chars] : to) {
      if (!rhs.empty()) rhs += " | ";
      rhs += Class(chars, false);
      if (d != m) rhs += " " + state(d);
    }
    rhs += " | " + Class(alphabet, true) + " " + state(0);
    rules += state(q) + " ::= " + rhs + "\n";
  }
  return rules;
}

std::string GrammarAfterThinking(const std::string& grammar, const ThinkingBlock& block) {
  // The answer's own start rule becomes a rule like any other: the name
  // `root` (its definition and any reference to it; not inside a literal, a
  // character class or a comment) is renamed.
  std::string out;
  out.reserve(grammar.size() + 64);
  auto word = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
  };
  for (size_t i = 0; i < grammar.size();) {
    const char c = grammar[i];
    if (c == '"' || c == '[') {
      const char close = c == '"' ? '"' : ']';
      size_t j = i + 1;
      while (j < grammar.size() && grammar[j] != close) j += grammar[j] == '\\' ? 2 : 1;
      j = std::min(j + 1, grammar.size());
      out.append(grammar, i, j - i);
      i = j;
    } else if (c == '#') {
      const size_t j = std::min(grammar.find_first_of("\r\n", i), grammar.size());
      out.append(grammar, i, j - i);
      i = j;
    } else if (word(c)) {
      size_t j = i;
      while (j < grammar.size() && word(grammar[j])) ++j;
      const std::string_view name(grammar.data() + i, j - i);
      out += name == "root" ? std::string_view("outpost-answer") : name;
      i = j;
    } else {
      out += c;
      ++i;
    }
  }
  if (!out.empty() && out.back() != '\n') out += '\n';
  const std::string ws = "[ \\t\\r\\n]{0,40}";
  if (block.open) {
    out += "root ::= outpost-thinking " + ws + " outpost-answer\n";
  } else {
    out += "root ::= (" + ws + " " + Literal(block.start) + " outpost-thinking " + ws +
           ")? outpost-answer\n";
  }
  out += UntilRules("outpost-thinking", block.end);
  return out;
}

}  // namespace outpost::engine

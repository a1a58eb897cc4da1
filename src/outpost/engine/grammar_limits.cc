#include "outpost/engine/grammar_limits.h"

#include <llama-grammar.h>  // llama_grammar_parser: llama.cpp's GBNF parser itself
#include <llama.h>

#include <algorithm>
#include <cctype>
#include <exception>
#include <utility>
#include <vector>

namespace outpost::engine {
namespace {

// Reads the digits at text[i...]; false when there are none. A number too
// large for 64 bits reads as UINT64_MAX (over the limit either way).
bool ReadCount(std::string_view text, size_t& i, uint64_t& out) {
  const size_t start = i;
  out = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    const auto d = static_cast<uint64_t>(text[i] - '0');
    out = out > (UINT64_MAX - d) / 10 ? UINT64_MAX : out * 10 + d;
    ++i;
  }
  return i > start;
}

void SkipSpace(std::string_view text, size_t& i) {
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
}

// Skips a quoted literal or character class starting at text[i] (the opening
// quote or bracket) as llama.cpp's parser reads it: an escape takes the next
// byte, and a UTF-8 lead byte the bytes its high bits announce, whatever
// they are — a quote among them closes nothing (fuzz_gbnf found a
// repetition this scan took for text while the parser expanded it).
void SkipDelimited(std::string_view text, size_t& i, char close) {
  for (++i; i < text.size() && text[i] != close; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\\') {
      ++i;
    } else if (c >= 0xC0) {
      const size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;  // llama.cpp's decode_utf8
      for (size_t k = 1; k < len && i + 1 < text.size() && text[i + 1] != '\0'; ++k) ++i;
    }
  }
  if (i < text.size()) ++i;
}

}  // namespace

Status CheckGrammarText(std::string_view gbnf, const std::string& param) {
  size_t i = 0;
  int depth = 0;
  while (i < gbnf.size()) {
    const char c = gbnf[i];
    if (c == '(' && ++depth > kMaxGrammarNesting) {
      return Status::InvalidArgument("'" + param + "' nests groups `( ... )` more than " +
                                         std::to_string(kMaxGrammarNesting) +
                                         " deep, the most the grammar parser is given",
                                     param);
    }
    if (c == ')' && depth > 0) --depth;
    if (c == '"') {
      SkipDelimited(gbnf, i, '"');
    } else if (c == '[') {
      SkipDelimited(gbnf, i, ']');
    } else if (c == '#') {
      while (i < gbnf.size() && gbnf[i] != '\n' && gbnf[i] != '\r') ++i;
    } else if (c == '{') {
      ++i;
      SkipSpace(gbnf, i);
      uint64_t lo = 0, hi = 0;
      // Malformed repetitions are the parser's to report.
      if (!ReadCount(gbnf, i, lo)) continue;
      SkipSpace(gbnf, i);
      bool has_hi = true;
      hi = lo;
      if (i < gbnf.size() && gbnf[i] == ',') {
        ++i;
        SkipSpace(gbnf, i);
        has_hi = ReadCount(gbnf, i, hi);
      }
      const std::string what = "'" + param + "': the grammar built from it repeats an item";
      if (has_hi && lo > hi) {
        return Status::InvalidArgument(
            what + " at least " + std::to_string(lo) + " and at most " + std::to_string(hi) +
                " times, which no output satisfies (a minimum above its maximum: minLength / "
                "maxLength, minItems / maxItems, or a pattern's {m,n})",
            param);
      }
      if (lo > kMaxGrammarRepetitions) {
        return Status::InvalidArgument(
            what + " at least " + std::to_string(lo) +
                " times; the grammar engine expands at most " +
                std::to_string(kMaxGrammarRepetitions) +
                " repetitions (minLength, minItems, or a pattern's {m,n})",
            param);
      }
      if (has_hi && hi > kMaxGrammarRepetitions) {
        return Status::InvalidArgument(
            what + " at most " + std::to_string(hi) +
                " times; the grammar engine enforces at most " +
                std::to_string(kMaxGrammarRepetitions) +
                " (above that it would let any number through: maxLength, maxItems, or a "
                "pattern's {m,n})",
            param);
      }
    } else {
      ++i;
    }
  }
  return Status::Ok();
}

namespace {

// "line L, column C" of byte `offset` in `text`, and the text from there to
// the end of its line (at most 40 bytes).
std::string Where(std::string_view text, size_t offset) {
  size_t line = 1, line_start = 0;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  std::string out =
      "line " + std::to_string(line) + ", column " + std::to_string(offset - line_start + 1);
  if (offset >= text.size()) return out + " (the end of the grammar)";
  const size_t eol = text.find_first_of("\r\n", offset);
  std::string_view rest =
      text.substr(offset, (eol == std::string_view::npos ? text.size() : eol) - offset);
  if (rest.empty()) return out + " (the end of the line)";
  const bool cut = rest.size() > 40;
  return out + ": `" + std::string(rest.substr(0, 40)) + (cut ? "...`" : "`");
}

// llama.cpp's parser errors end " at " + the rest of the grammar: that tail
// becomes a line and column. Other messages pass as they are.
std::string Explain(const std::string& what, std::string_view gbnf) {
  for (size_t k = what.find(" at "); k != std::string::npos; k = what.find(" at ", k + 1)) {
    std::string_view rest = std::string_view(what).substr(k + 4);
    if (rest.size() <= gbnf.size() && gbnf.substr(gbnf.size() - rest.size()) == rest) {
      return what.substr(0, k) + " at " + Where(gbnf, gbnf.size() - rest.size());
    }
  }
  return what;
}

bool EndOfSequence(const llama_grammar_element& e) {
  return e.type == LLAMA_GRETYPE_END || e.type == LLAMA_GRETYPE_ALT;
}

// What the rules can start with, found in time linear in the grammar's size.
struct StartChains {
  // A rule that can start with itself (through rules that can match the
  // empty text), or -1. Stricter than llama.cpp's own check, which counts a
  // rule as able to match nothing only when one of its alternatives is empty
  // as written: `x ::= ws x "z"` with `ws ::= " "?` passes there, and the
  // grammar engine then grows its stacks without end (a request that would
  // hold a thread and its memory).
  int64_t left_recursive = -1;
  // Without one: the most rules a rule starts through, one inside the next
  // (`a ::= b ...`, `b ::= c ...`). llama.cpp's own check recurses once per
  // rule of such a chain, and 260,000 of them (3.6 MB) overflowed the
  // engine thread's stack.
  size_t deepest = 0;
};

StartChains FindStartChains(const llama_grammar_rules& rules) {
  const size_t n = rules.size();
  // Which rules can match the empty text: an alternative can once every
  // rule it refers to can and it holds nothing else (a worklist over the
  // alternatives' counts of references not yet known to).
  struct Alternative {
    size_t rule;
    size_t pending = 0;  // references to rules not (yet) known to match nothing
    bool terminal = false;
  };
  std::vector<Alternative> alts;
  std::vector<std::vector<size_t>> used_in(n);  // rule -> alternatives, once per reference
  for (size_t r = 0; r < n; ++r) {
    Alternative alt{r};
    for (const auto& e : rules[r]) {
      if (EndOfSequence(e)) {
        alts.push_back(alt);
        alt = Alternative{r};
        if (e.type == LLAMA_GRETYPE_END) break;
      } else if (e.type == LLAMA_GRETYPE_RULE_REF && e.value < n) {
        ++alt.pending;
        used_in[e.value].push_back(alts.size());
      } else {
        alt.terminal = true;
      }
    }
  }
  std::vector<char> nullable(n, 0);
  std::vector<size_t> work;
  for (const auto& alt : alts) {
    if (!alt.terminal && alt.pending == 0 && !nullable[alt.rule]) {
      nullable[alt.rule] = 1;
      work.push_back(alt.rule);
    }
  }
  while (!work.empty()) {
    const size_t s = work.back();
    work.pop_back();
    for (size_t a : used_in[s]) {
      Alternative& alt = alts[a];
      if (--alt.pending == 0 && !alt.terminal && !nullable[alt.rule]) {
        nullable[alt.rule] = 1;
        work.push_back(alt.rule);
      }
    }
  }
  // The rules each rule can start with: references up to and including the
  // first that cannot match nothing, in every alternative.
  std::vector<std::vector<uint32_t>> starts(n);
  for (size_t r = 0; r < n; ++r) {
    bool open = true;  // still at the start of the alternative
    for (const auto& e : rules[r]) {
      if (EndOfSequence(e)) {
        open = true;
      } else if (!open) {
        continue;
      } else if (e.type == LLAMA_GRETYPE_RULE_REF && e.value < n) {
        starts[r].push_back(e.value);
        open = nullable[e.value] != 0;
      } else {
        open = false;
      }
    }
  }
  // A cycle among those edges: depth first, with an explicit stack; a rule's
  // chain is known once its last edge is followed (its rules are done).
  StartChains out;
  enum : char { kNew, kOnPath, kDone };
  std::vector<char> state(n, kNew);
  std::vector<size_t> chain(n, 0);
  for (size_t root = 0; root < n; ++root) {
    if (state[root] != kNew) continue;
    std::vector<std::pair<size_t, size_t>> path{{root, 0}};  // rule, next edge
    state[root] = kOnPath;
    while (!path.empty()) {
      auto& [r, next] = path.back();
      if (next == starts[r].size()) {
        state[r] = kDone;
        for (uint32_t to : starts[r]) chain[r] = std::max(chain[r], chain[to] + 1);
        out.deepest = std::max(out.deepest, chain[r]);
        path.pop_back();
        continue;
      }
      const uint32_t to = starts[r][next++];
      if (state[to] == kOnPath) {
        out.left_recursive = to;
        return out;
      }
      if (state[to] == kNew) {
        state[to] = kOnPath;
        path.push_back({to, 0});
      }
    }
  }
  return out;
}

}  // namespace

Status ParseGrammar(const std::string& gbnf, const llama_vocab* vocab, const std::string& param) {
  auto refuse = [&](const std::string& why) {
    return Status::InvalidArgument("'" + param + "' is not a grammar llama.cpp can use: " + why,
                                   param);
  };
  // A minimum above its maximum would make the parser expand without end.
  if (Status st = CheckGrammarText(gbnf, param); !st.ok()) return st;
  if (gbnf.find('\0') != std::string::npos) {
    return refuse("it holds a NUL byte (the parser would stop there)");
  }
  llama_grammar_parser parser(vocab);
  try {
    // parse() without its stderr print: the same steps (leading space and
    // comments, then rule after rule).
    size_t i = 0;
    while (i < gbnf.size()) {
      if (gbnf[i] == ' ' || gbnf[i] == '\t' || gbnf[i] == '\r' || gbnf[i] == '\n') {
        ++i;
      } else if (gbnf[i] == '#') {
        while (i < gbnf.size() && gbnf[i] != '\r' && gbnf[i] != '\n') ++i;
      } else {
        break;
      }
    }
    const char* pos = gbnf.c_str() + i;
    while (*pos != '\0') pos = parser.parse_rule(pos);
  } catch (const std::out_of_range&) {
    return refuse("a repetition count or token id is too large");
  } catch (const std::exception& e) {
    const std::string what = e.what();
    if (what.find("multiplied by the new repetition") != std::string::npos) {
      return refuse("a repeated item's rules times its count exceed " +
                    std::to_string(kMaxGrammarRepetitions) +
                    ", the most the parser expands (lower maxItems, maxLength or a pattern's "
                    "{m,n}, or simplify the repeated item)");
    }
    return refuse(Explain(what, gbnf));
  }
  for (const auto& [name, id] : parser.symbol_ids) {
    if (id >= parser.rules.size() || parser.rules[id].empty()) {
      return refuse("the rule '" + name + "' is used but never defined");
    }
  }
  if (parser.rules.empty()) return refuse("it defines no rule");
  if (parser.symbol_ids.find("root") == parser.symbol_ids.end()) {
    return refuse("it defines no 'root' rule (where the output starts)");
  }
  const StartChains chains = FindStartChains(parser.rules);
  const int64_t left = chains.left_recursive;
  if (left >= 0) {
    std::string name = "#" + std::to_string(left);
    for (const auto& [n, id] : parser.symbol_ids) {
      if (id == static_cast<uint32_t>(left)) name = n;
    }
    return refuse("the rule '" + name +
                  "' is left-recursive (it can start with itself, as in `expr ::= expr \"+\" "
                  "term`), which the grammar engine cannot run; write it as a repetition "
                  "(`expr ::= term (\"+\" term)*`)");
  }
  if (chains.deepest + 1 > kMaxGrammarRuleChain) {
    return refuse("a chain of " + std::to_string(chains.deepest + 1) +
                  " rules each starting with the next (`a ::= b ...`, `b ::= c ...`) passes " +
                  std::to_string(kMaxGrammarRuleChain) +
                  ", the most llama.cpp's grammar check follows");
  }
  return Status::Ok();
}

bool IsGrammarTooAmbiguous(const std::exception& e) {
  // The patch's message (scripts/patches/llama.cpp/0001-grammar-work-bounds.patch).
  return std::string_view(e.what()).rfind("grammar too ambiguous", 0) == 0;
}

Status GrammarTooAmbiguous(const std::string& param) {
  return Status::InvalidArgument(
      "'" + param +
          "' is too ambiguous to follow: the same text matches it in too many ways at once "
          "(more than " +
          std::to_string(kMaxGrammarStacks) + " ways to go on, or " +
          std::to_string(kMaxGrammarStackWork) +
          " parse states for one token), as in `e ::= \"x\" e \"y\" | \"x\" e \"z\"`; "
          "write each choice so that its first characters decide it",
      param);
}

Status CheckGrammar(const std::string& gbnf, const std::string& param) {
  return ParseGrammar(gbnf, /*vocab=*/nullptr, param);
}

}  // namespace outpost::engine

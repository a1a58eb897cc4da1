#include "outpost/engine/grammar_limits.h"

#include <llama.h>

#include <cctype>
#include <exception>

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
// quote or bracket); escapes skip the next byte.
void SkipDelimited(std::string_view text, size_t& i, char close) {
  for (++i; i < text.size() && text[i] != close; ++i) {
    if (text[i] == '\\') ++i;
  }
  if (i < text.size()) ++i;
}

}  // namespace

Status CheckGrammarRepetitions(std::string_view gbnf, const std::string& param) {
  size_t i = 0;
  while (i < gbnf.size()) {
    const char c = gbnf[i];
    if (c == '"') {
      SkipDelimited(gbnf, i, '"');
    } else if (c == '[') {
      SkipDelimited(gbnf, i, ']');
    } else if (c == '#') {
      while (i < gbnf.size() && gbnf[i] != '\n') ++i;
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

Status CheckGrammar(const std::string& gbnf, const std::string& param) {
  Status st = CheckGrammarRepetitions(gbnf, param);
  if (!st.ok()) return st;
  llama_sampler* parsed = nullptr;
  try {
    parsed = llama_sampler_init_grammar(/*vocab=*/nullptr, gbnf.c_str(), "root");
  } catch (const std::exception&) {
    parsed = nullptr;
  }
  if (parsed == nullptr) {
    return Status::InvalidArgument(
        "'" + param +
            "': llama.cpp's grammar parser refused the grammar built from it; the usual cause "
            "is a repeated item whose rules times its count exceed " +
            std::to_string(kMaxGrammarRepetitions) +
            " (lower maxItems, maxLength or a pattern's {m,n}, or simplify the items)",
        param);
  }
  llama_sampler_free(parsed);
  return Status::Ok();
}

}  // namespace outpost::engine

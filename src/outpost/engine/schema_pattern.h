// A JSON schema's `pattern` (an ECMA-262 regular expression) rewritten into
// the subset llama.cpp's schema converter turns into grammar rules.
//
// The converter reads anchored patterns (^…$) of literals, `.`, classes,
// groups, `|`, `*`, `+`, `?` and `{m,n}`, with the escapes GBNF knows
// (\t \n \r \xHH \uHHHH, and escaped metacharacters). For anything else it
// prints a warning to stderr and accepts ANY string — a constraint silently
// dropped. The common cases are rewritten here so they are enforced:
//   * \d \w \s (and \D \W \S outside classes) become character classes;
//   * an escaped punctuation character (\/ \: \# …) becomes the character;
//   * an unanchored pattern (JSON schema: the string contains a match) is
//     wrapped as ^A*(?:P)A*$, and a half-anchored one on its open side;
//   * the pattern names the string's characters, the grammar the answer's
//     JSON text: a quote, backslash or control character the pattern names
//     (literally, escaped, in a class, or through \s) becomes the escape a
//     JSON string writes it as (\" \\ \t \n \u000b …), a class holding
//     one becomes (?:[the rest]|\"|…), and the rest of a rebuilt class is
//     written as ranges of \xHH;
//   * `.`, negated classes and A (any character) leave out the quote, the
//     backslash and control characters, which llama.cpp's `.` let through
//     raw, ending or breaking the JSON string.
// What is left unsupported (backreferences, lookaround, \b, named groups,
// \D inside a class, …) stays as it was; the caller detects the converter's
// fallback and refuses the pattern (json_schema_grammar.cc).
// Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace outpost::engine {

std::string RewriteSchemaPattern(std::string_view pattern);

}  // namespace outpost::engine

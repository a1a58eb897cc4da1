// Limits of llama.cpp's GBNF parser, checked before a grammar reaches it.
//
// llama.cpp expands a repetition `x{m,n}` into m copies of x and n - m
// optional ones when it parses the grammar. It refuses m > 2000, but it never
// checks m <= n: `x{5,2}` makes n - m wrap around to 2^64 - 3 and the parser
// allocates rules until the process is killed for memory (a JSON schema with
// minLength above maxLength, minItems above maxItems, or a pattern's `{5,2}`
// becomes exactly that). CheckGrammarRepetitions finds every repetition in
// a grammar's text and refuses those, naming the counts. It does not model
// the parser's other limit (the rules inside a repeated group times the
// count, also 2000): the parser refuses that itself, without harm, and
// CheckGrammar asks it.
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "outpost/util/status.h"

namespace outpost::engine {

// The most repetitions llama.cpp's grammar parser expands (its
// MAX_REPETITION_THRESHOLD): a larger lower bound is refused there, a larger
// upper bound is silently treated as no bound at all.
inline constexpr uint64_t kMaxGrammarRepetitions = 2000;

// OK when every `{m}`, `{m,}` and `{m,n}` outside string literals, character
// classes and comments has m <= n and m, n <= kMaxGrammarRepetitions (an
// upper bound past it would be no bound, and constrained output is never
// silently unconstrained). Errors: InvalidArgument naming `param`.
Status CheckGrammarRepetitions(std::string_view gbnf, const std::string& param);

// CheckGrammarRepetitions, then llama.cpp's own parser on `gbnf` with no
// vocabulary (for grammars built from a JSON schema, which never name a
// token), so that a grammar it refuses is refused while the request is
// checked, naming `param`, not when its sampler is built. The parser's own
// reason goes to stderr only. Errors: InvalidArgument naming `param`.
Status CheckGrammar(const std::string& gbnf, const std::string& param);

}  // namespace outpost::engine

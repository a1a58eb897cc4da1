// Limits of llama.cpp's GBNF parser, checked before a grammar reaches it.
//
// llama.cpp expands a repetition `x{m,n}` into m copies of x and n - m
// optional ones when it parses the grammar. It refuses m > 2000, but it never
// checks m <= n: `x{5,2}` makes n - m wrap around to 2^64 - 3 and the parser
// allocates rules until the process is killed for memory (a JSON schema with
// minLength above maxLength, minItems above maxItems, or a pattern's `{5,2}`
// becomes exactly that). CheckGrammarText finds every repetition in
// a grammar's text and refuses those, naming the counts. It does not model
// the parser's other limit (the rules inside a repeated group times the
// count, also 2000): the parser refuses that itself, without harm, and
// CheckGrammar asks it.
//
// The parser also recurses once per nested group: `((((...))))` 20,000 deep
// (40 KB) overflowed the thread's stack and killed the server (measured
// 2026-12-07); CheckGrammarText refuses nesting past kMaxGrammarNesting.
//
// Outpost's patch to llama.cpp (below) makes its parser refuse both of these
// itself. The checks here stay on purpose: their messages name the schema
// keyword or the limit, and a LLAMA_CPP_SRC checkout is built unpatched
// (scripts/bootstrap), where they are the only guard.
//
// The grammar engine's work is bounded by Outpost's patch to llama.cpp
// (scripts/patches/llama.cpp/0001-grammar-work-bounds.patch): an ambiguous
// grammar (`e ::= "x" e "y" | "x" e "z"`) doubles its parse stacks with each
// character, and held the engine thread, and every session with it, for good.
// Past the bounds llama.cpp throws; IsGrammarTooAmbiguous tells that error
// from others and GrammarTooAmbiguous words it for the client.
//
// ParseGrammar runs llama.cpp's own GBNF parser (its rules, its limits)
// without what the parser does with an error: print the reason and the whole
// grammar to stderr — a few hundred KB of log per bad request — and tell its
// caller only that it failed. Here the reason comes back in the status, with
// where it is (line, column and the text there), and so do the checks
// llama.cpp makes when it builds the sampler (every rule used is defined,
// `root` is, no rule is left-recursive, no chain of rules each starting with
// the next is longer than kMaxGrammarRuleChain), each naming the rule.
// Pure; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

#include "outpost/util/status.h"

struct llama_vocab;

namespace outpost::engine {

// The most repetitions llama.cpp's grammar parser expands (its
// MAX_REPETITION_THRESHOLD): a larger lower bound is refused there, a larger
// upper bound is silently treated as no bound at all.
inline constexpr uint64_t kMaxGrammarRepetitions = 2000;

// The deepest nesting of groups `( ... )` the parser is given (llama.cpp's
// own proposed cap, ggml-org/llama.cpp#26602); JSON schemas' grammars nest a
// few levels.
inline constexpr int kMaxGrammarNesting = 1000;

// The longest chain of rules each starting with the next that ParseGrammar
// passes (llama.cpp's left-recursion check recurses once per rule of it).
inline constexpr size_t kMaxGrammarRuleChain = 10000;

// The bounds of the patched grammar engine: parse stacks alive after one
// step, and stacks built by one sampler init, apply or token accept.
inline constexpr size_t kMaxGrammarStacks = 1024;
inline constexpr size_t kMaxGrammarStackWork = 65536;

// What Engine::Sample gives when following the sequence's grammar passed
// those bounds (kNoToken, types.h: the grammar allows no token).
inline constexpr int32_t kGrammarTooAmbiguous = -2;

// OK when every `{m}`, `{m,}` and `{m,n}` outside string literals, character
// classes and comments has m <= n and m, n <= kMaxGrammarRepetitions (an
// upper bound past it would be no bound, and constrained output is never
// silently unconstrained), and groups nest at most kMaxGrammarNesting deep.
// Errors: InvalidArgument naming `param`.
Status CheckGrammarText(std::string_view gbnf, const std::string& param);

// True for the error the patched grammar engine throws past its bounds.
bool IsGrammarTooAmbiguous(const std::exception& e);
// InvalidArgument naming `param`: the grammar is too ambiguous to follow,
// with the bound and how to write it instead.
Status GrammarTooAmbiguous(const std::string& param);

// CheckGrammarText, llama.cpp's parser on `gbnf`, then the sampler's
// checks (see above).
// `vocab` (may be null) resolves token references (`<think>`, `<[42]>`);
// without one, `<think>` is an error. Errors: InvalidArgument naming `param`,
// the reason (llama.cpp's words), the line and column.
Status ParseGrammar(const std::string& gbnf, const llama_vocab* vocab, const std::string& param);

// CheckGrammarText, then ParseGrammar with no vocabulary (for
// grammars built from a JSON schema, which never name a token), so that a
// grammar llama.cpp would refuse is refused while the request is checked,
// naming `param`, not when its sampler is built. Errors: InvalidArgument
// naming `param`.
Status CheckGrammar(const std::string& gbnf, const std::string& param);

}  // namespace outpost::engine

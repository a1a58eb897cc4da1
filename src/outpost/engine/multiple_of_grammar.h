// GBNF for the JSON numbers that are multiples of a step (JSON schema's
// "multipleOf", Pydantic's multiple_of), within optional bounds. llama.cpp's
// converter ignores the keyword; this rule keeps it exactly (decimal digits,
// never doubles).
//
// A step of k × 10^e (k not a multiple of 10) admits, on a "number", plain
// decimals with at most max(0, -e) fraction digits (trailing zeros allowed,
// no exponent) whose scaled value is a multiple of k × 10^max(0, e); on an
// "integer", the integers that are multiples of the step. How the rule is
// made, by the step and the bounds:
//   - a power of ten (0.01, 1, 100 on a number; any step ≤ 1 that divides 1
//     on an integer): number_range_grammar.h with the fraction digits capped,
//     any bounds;
//   - both bounds, at most kMaxListedMultiples multiples between them: the
//     multiples' texts as a digit trie (at most 11 ways on at every
//     character, so the grammar engine's work per token stays small);
//   - no upper bound and either no lower one (a "-" allowed), or one that
//     leaves exactly the multiples from 0, or from the first above 0: the
//     digits read by their remainder, at most kMaxRemainderStates states;
//   - no upper bound and a lower one above the first multiple, F with D
//     integer digits: the multiples from F below 10^D listed (at most
//     kMaxListedMultiples), the longer ones read by their remainder with the
//     integer digits counted up to D + 1.
// Anything else is refused (a negative lower bound, an upper bound alone:
// a product of bounds and remainders would grow with the bounds' digits).
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "outpost/engine/number_range_grammar.h"
#include "outpost/util/status.h"

namespace outpost::engine {

inline constexpr int64_t kMaxListedMultiples = 10000;
inline constexpr int64_t kMaxRemainderStates = 1000;

// Rules defining `name` (helpers `name`-<n>), one per line. `step`: the
// multipleOf value as JSON writes it. Errors: InvalidArgument (no param)
// when the step is not a number above 0 within a bound's limits (below
// 10^15, at most kMaxFractionDigits fraction digits), a bound is out of
// those limits, no multiple lies within the bounds, or the combination is
// past what the rule is made for (above).
StatusOr<std::string> MultipleOfGrammar(const std::string& name, const std::string& step,
                                        bool integer, const std::optional<NumberBound>& lo,
                                        const std::optional<NumberBound>& hi);

}  // namespace outpost::engine

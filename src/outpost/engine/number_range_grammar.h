// GBNF for a JSON number within bounds ("type": "number" with minimum,
// maximum, exclusiveMinimum, exclusiveMaximum), which llama.cpp's JSON-schema
// converter does not enforce (it keeps bounds on integers only).
//
// The numbers it admits are plain decimals: an optional "-", an integer part
// without leading zeros ("0" or [1-9][0-9]*, at most 16 digits), and an
// optional fraction of 1 to kMaxFractionDigits digits; no exponent. A number
// is admitted exactly when its decimal value lies within the bounds (compared
// digit by digit, never as a double): the integer part by range, the fraction
// free except where the integer part equals a bound's.
// Pure; thread-safe.
#pragma once

#include <optional>
#include <string>

#include "outpost/util/status.h"

namespace outpost::engine {

inline constexpr int kMaxFractionDigits = 15;

// One side of the range: a decimal's text as JSON writes a number ("0.5",
// "-3", "1e-07"), and whether the bound itself is excluded.
struct NumberBound {
  std::string value;
  bool exclusive = false;
};

// Rules defining `name` (and helpers named `name`-<n>), one per line, for
// the numbers within [lo, hi] (an absent side is open) with at most
// `max_fraction_digits` (0 … kMaxFractionDigits) fraction digits: 0 admits
// the integers only. Errors: InvalidArgument (no param) when a bound is not
// a decimal, has more than kMaxFractionDigits fraction digits or a
// magnitude of 10^15 or more, or when no number lies within the bounds.
StatusOr<std::string> NumberRangeGrammar(const std::string& name,
                                         const std::optional<NumberBound>& lo,
                                         const std::optional<NumberBound>& hi,
                                         int max_fraction_digits = kMaxFractionDigits);

// A decimal: sign, integer digits without leading zeros ("0" for none),
// fraction digits without trailing zeros. Zero is never negative.
struct Decimal {
  bool negative = false;
  std::string integer = "0";
  std::string fraction;

  bool zero() const { return integer == "0" && fraction.empty(); }
};

// JSON number text ("0.5", "-3", "1e-07") → Decimal; false if it is not one,
// or its magnitude is 10^15 or more, or it has more than kMaxFractionDigits
// fraction digits (a bound's limits).
bool ParseDecimal(const std::string& text, Decimal* out);

}  // namespace outpost::engine

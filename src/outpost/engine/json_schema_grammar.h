// JSON schema → GBNF grammar, through llama.cpp's converter, refusing what
// the converter would silently ignore.
//
// llama.cpp's converter drops keywords it does not implement (e.g. "not",
// "uniqueItems", format "email") and would then accept output the schema
// forbids. Structured output must never be silently unconstrained, so every
// keyword is checked first against what the converter enforces; anything else
// is an InvalidArgument that names the keyword and where it is. So are the
// bounds it cannot keep: minimum/maximum on anything but integers, counts
// (minLength, maxItems, ...) past what llama.cpp's grammar parser expands, and
// ranges no output satisfies (a minimum above its maximum), which the parser
// would take until the process ran out of memory, or turn into a grammar
// that dead-ends mid-answer.
// Pure; thread-safe.
#pragma once

#include <string>

#include "outpost/util/status.h"

namespace outpost::engine {

// Also refused: more than util::kMaxSchemaAlternatives (1000) enum values and
// anyOf/oneOf branches in all. The grammar sampler tries each on every token,
// on the engine thread that every request shares: measured on a 2-vCPU box,
// 1000 values held the other streams up to 0.21 s per token, 20,000 values
// 4.5 s.
// `schema` is JSON text. `param` names the request field for errors
// ("response_format.json_schema.schema"). Errors: InvalidArgument (not JSON,
// an unsupported keyword or format, a bound that cannot be kept or kept
// together, a schema the converter rejects).
StatusOr<std::string> JsonSchemaToGrammar(const std::string& schema, const std::string& param);

}  // namespace outpost::engine

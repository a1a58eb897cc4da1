// JSON schema → GBNF grammar, through llama.cpp's converter, refusing what
// the converter would silently ignore.
//
// llama.cpp's converter drops keywords it does not implement (e.g. "not",
// "uniqueItems", format "email") and would then accept output the schema
// forbids. Structured output must never be silently unconstrained, so every
// keyword is checked first against what the converter enforces; anything else
// is an InvalidArgument that names the keyword and where it is. Bounds on
// "type": "number" (which the converter ignores) get Outpost's own rule
// (number_range_grammar.h). Refused are the bounds that cannot be kept:
// minimum/maximum without "type" integer or number, counts
// (minLength, maxItems, ...) past what llama.cpp's grammar parser expands, and
// ranges no output satisfies (a minimum above its maximum), which the parser
// would take until the process ran out of memory, or turn into a grammar
// that dead-ends mid-answer.
// Pure; thread-safe.
#pragma once

#include <string>
#include <vector>

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

// A schema readied for llama.cpp's converter wherever it runs (here, or in
// llama.cpp's chat code building a template's own tool-call grammar):
// checked as above (but for the count of alternatives), its patterns
// rewritten (schema_pattern.h), and each bounded number replaced by a marker
// const that SpliceNumberRules() turns into Outpost's rule in the grammar
// the converter made of it.
struct ReadySchema {
  std::string schema;                     // JSON text for the converter
  size_t first_number = 0;                // the first marker's number
  std::vector<std::string> number_rules;  // by marker, from first_number
  bool changed = false;                   // a pattern rewritten or a number marked
};
// `first_number`: markers are numbered from it, so that several schemas in
// one grammar (a request's tools) keep theirs apart. Errors: as above.
StatusOr<ReadySchema> ReadyJsonSchema(const std::string& schema, const std::string& param,
                                      size_t first_number = 0);
// Each of `ready`'s markers in `gbnf` replaced by its rule's name, and those
// rules added; a marker the converter left out (with the part of the schema
// it sat in) adds nothing.
void SpliceNumberRules(const ReadySchema& ready, std::string* gbnf);

}  // namespace outpost::engine

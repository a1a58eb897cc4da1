#include "outpost/engine/json_schema_grammar.h"

#include <json-schema-to-grammar.h>
#include <json.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <exception>
#include <optional>
#include <set>
#include <vector>

#include "outpost/engine/grammar_limits.h"
#include "outpost/engine/multiple_of_grammar.h"
#include "outpost/engine/number_range_grammar.h"
#include "outpost/engine/schema_pattern.h"
#include "outpost/util/json_text.h"
#include "outpost/util/status_macros.h"

namespace outpost::engine {
namespace {

// Ordered: the converter writes an object's properties in the order given.
using json = nlohmann::ordered_json;

// Keywords llama.cpp's converter turns into grammar rules.
const std::set<std::string>& Enforced() {
  static const auto* s = new std::set<std::string>{"type",
                                                   "properties",
                                                   "required",
                                                   "additionalProperties",
                                                   "items",
                                                   "prefixItems",
                                                   "minItems",
                                                   "maxItems",
                                                   "pattern",
                                                   "minLength",
                                                   "maxLength",
                                                   "minimum",
                                                   "maximum",
                                                   "exclusiveMinimum",
                                                   "exclusiveMaximum",
                                                   "multipleOf",
                                                   "$ref",
                                                   "$defs",
                                                   "definitions",
                                                   "anyOf",
                                                   "oneOf",
                                                   "allOf",
                                                   "const",
                                                   "enum",
                                                   "format"};
  return *s;
}

// Annotations: they do not constrain output, so ignoring them is right.
const std::set<std::string>& Annotations() {
  static const auto* s =
      new std::set<std::string>{"title", "description", "default",    "examples", "$schema",
                                "$id",   "$comment",    "deprecated", "readOnly", "writeOnly"};
  return *s;
}

Status Unsupported(const std::string& param, const std::string& where, const std::string& what) {
  return Status::InvalidArgument(
      "'" + param + "' uses " + what + " at " + (where.empty() ? "/" : where) +
          ", which grammar-constrained decoding cannot enforce (supported: type, properties, "
          "required, additionalProperties, items, prefixItems, minItems, maxItems, enum, const, "
          "anyOf, oneOf, allOf, $ref/$defs, pattern, minLength, maxLength, format "
          "date|time|date-time|uuid, and on integers and numbers minimum, maximum, "
          "exclusiveMinimum, exclusiveMaximum, multipleOf)",
      param);
}

// The rules of the bounded numbers met so far (number_range_grammar.h),
// numbered from `first`; each such schema was replaced by a const marker
// that SpliceNumberRules() swaps for its rule.
struct Numbers {
  size_t first = 0;
  std::vector<std::string> rules;
  bool patterns_rewritten = false;
};

std::string NumberMarker(size_t i) {
  return "__outpost_number_" + std::to_string(i) + "__";
}

std::string NumberRule(size_t i) {
  return "outpost-number-" + std::to_string(i);
}

Status Check(json& s, const std::string& where, const std::string& param, Numbers* numbers);

std::string At(const std::string& where) {
  return where.empty() ? "/" : where;
}

// minLength/maxLength, minItems/maxItems: non-negative integers the grammar
// engine can expand (kMaxGrammarRepetitions), the minimum not above the
// maximum. llama.cpp's parser would be killed for memory by a minimum above
// the maximum, and would drop a maximum past its limit without a word.
Status CheckCounts(const json& s, const std::string& where, const std::string& param,
                   const char* min_key, const char* max_key) {
  std::optional<uint64_t> lo, hi;
  for (const char* key : {min_key, max_key}) {
    if (!s.contains(key)) continue;
    const json& v = s.at(key);
    const bool ok = v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
    if (!ok) {
      return Status::InvalidArgument("'" + param + "' at " + At(where) + ": " + key +
                                         " must be a non-negative integer, got " + v.dump(),
                                     param);
    }
    const uint64_t n = v.get<uint64_t>();
    if (n > kMaxGrammarRepetitions) {
      return Status::InvalidArgument(
          "'" + param + "' at " + At(where) + ": " + key + " " + std::to_string(n) +
              " is more than grammar-constrained decoding can enforce (at most " +
              std::to_string(kMaxGrammarRepetitions) + ")",
          param);
    }
    (key == min_key ? lo : hi) = n;
  }
  if (lo && hi && *lo > *hi) {
    return Status::InvalidArgument("'" + param + "' at " + At(where) + ": " + min_key + " " +
                                       std::to_string(*lo) + " is above " + max_key + " " +
                                       std::to_string(*hi) + ", which no output satisfies",
                                   param);
  }
  return Status::Ok();
}

// minimum/maximum and their exclusive forms. llama.cpp's converter enforces
// them on integers only (a number's bounds would be ignored), reads one of
// each pair, and turns an empty range into a grammar that dead-ends. On
// "type": "number" Outpost builds the grammar itself: the schema becomes a
// marker const whose rule Splice() puts in.
Status CheckBounds(json& s, const std::string& where, const std::string& param, Numbers* numbers) {
  const char* keys[] = {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"};
  const bool multiple = s.contains("multipleOf");
  bool any = multiple;
  for (const char* key : keys) any = any || s.contains(key);
  if (!any) return Status::Ok();
  const std::string at = "'" + param + "' at " + At(where) + ": ";
  bool integer = false;
  const bool number = s.contains("type") && s.at("type") == "number";
  if (s.contains("type")) {
    const json& t = s.at("type");
    if (t.is_string()) {
      integer = t == "integer";
    } else if (t.is_array()) {
      bool numeric = false;
      for (const auto& e : t) {
        integer = integer || e == "integer";
        numeric = numeric || e == "number";
      }
      integer = integer && !numeric;
    }
  }
  if (!integer && !number) {
    return Status::InvalidArgument(
        at + "minimum, maximum, exclusiveMinimum, exclusiveMaximum and multipleOf can be "
             "enforced with \"type\": \"integer\" or \"type\": \"number\" only (for a nullable "
             "bounded number, use anyOf with {\"type\": \"null\"})",
        param);
  }
  if (s.contains("minimum") && s.contains("exclusiveMinimum")) {
    return Status::InvalidArgument(at + "give minimum or exclusiveMinimum, not both", param);
  }
  if (s.contains("maximum") && s.contains("exclusiveMaximum")) {
    return Status::InvalidArgument(at + "give maximum or exclusiveMaximum, not both", param);
  }
  // The integers the bounds admit, as llama.cpp rounds them (inwards).
  constexpr double kLimit = 4611686018427387904.0;  // 2^62: no overflow at +-1
  double lo = -kLimit, hi = kLimit;
  std::optional<NumberBound> lo_bound, hi_bound;
  for (const char* key : keys) {
    if (!s.contains(key)) continue;
    const json& v = s.at(key);
    if (!v.is_number()) {
      return Status::InvalidArgument(at + key + " must be a number, got " + v.dump(), param);
    }
    const double d = v.get<double>();
    if (!(std::fabs(d) < kLimit)) {
      return Status::InvalidArgument(at + key + " must be between -2^62 and 2^62", param);
    }
    const std::string k = key;
    if (k == "minimum") lo = std::ceil(d);
    if (k == "exclusiveMinimum") lo = std::floor(d) + 1;
    if (k == "maximum") hi = std::floor(d);
    if (k == "exclusiveMaximum") hi = std::ceil(d) - 1;
    const bool exclusive = k.rfind("exclusive", 0) == 0;
    (k == "minimum" || k == "exclusiveMinimum" ? lo_bound : hi_bound) =
        NumberBound{v.dump(), exclusive};
  }
  if (multiple) {
    // Outpost's rule keeps the step and the bounds together (the converter
    // reads neither multipleOf nor a number's bounds).
    if (s.contains("enum") || s.contains("const")) {
      return Status::InvalidArgument(at + "give enum/const or multipleOf, not both", param);
    }
    const json& step = s.at("multipleOf");
    if (!step.is_number()) {
      return Status::InvalidArgument(at + "multipleOf must be a number, got " + step.dump(), param);
    }
    const size_t i = numbers->first + numbers->rules.size();
    auto rules = MultipleOfGrammar(NumberRule(i), step.dump(), integer, lo_bound, hi_bound);
    if (!rules.ok()) return Status::InvalidArgument(at + rules.status().message(), param);
    numbers->rules.push_back(std::move(rules).value());
    s = json{{"const", NumberMarker(i)}};
    return Status::Ok();
  }
  if (number) {
    if (s.contains("enum") || s.contains("const")) {
      return Status::InvalidArgument(at + "give enum/const or bounds on a number, not both", param);
    }
    const size_t i = numbers->first + numbers->rules.size();
    auto rules = NumberRangeGrammar(NumberRule(i), lo_bound, hi_bound);
    if (!rules.ok()) return Status::InvalidArgument(at + rules.status().message(), param);
    numbers->rules.push_back(std::move(rules).value());
    s = json{{"const", NumberMarker(i)}};
    return Status::Ok();
  }
  if (lo > hi) {
    return Status::InvalidArgument(at + "no integer lies within its bounds", param);
  }
  return Status::Ok();
}

Status CheckEach(json& list, const std::string& where, const std::string& param, Numbers* numbers) {
  if (list.is_array()) {
    for (size_t i = 0; i < list.size(); ++i) {
      Status st = Check(list[i], where + "/" + std::to_string(i), param, numbers);
      if (!st.ok()) return st;
    }
  } else if (list.is_object()) {
    for (auto& [k, v] : list.items()) {
      Status st = Check(v, where + "/" + k, param, numbers);
      if (!st.ok()) return st;
    }
  }
  return Status::Ok();
}

// The grammar llama.cpp's converter makes of a lone schema; throws as the
// converter does.
std::string Convert(const std::string& schema) {
  return json_schema_to_grammar(common_json::parse(schema), /*force_gbnf=*/true);
}

// `pattern`: a string, rewritten (schema_pattern.h) in place into what the
// converter enforces; refused when the converter would still fall back to
// accepting any string.
Status CheckPattern(json& v, const std::string& where, const std::string& param) {
  const std::string at = "'" + param + "' at " + At(where) + ": ";
  if (!v.is_string()) {
    return Status::InvalidArgument(at + "pattern must be a string, got " + v.dump(), param);
  }
  const std::string original = v.get<std::string>();
  const std::string rewritten = RewriteSchemaPattern(original);
  std::string alone;
  try {
    alone = Convert(json{{"type", "string"}, {"pattern", rewritten}}.dump());
  } catch (const std::exception& e) {
    std::string why = e.what();
    for (auto& c : why) {
      if (c == '\n') c = ' ';
    }
    return Status::InvalidArgument(
        at + "pattern " + json(original).dump() + " cannot be used: " + why, param);
  }
  // A pattern it reads becomes `root ::= "\"" (…) "\""`; the fallback is
  // the plain string rule.
  if (alone.find(R"(root ::= "\"" ()") == std::string::npos) {
    return Status::InvalidArgument(
        at + "pattern " + json(original).dump() +
            " uses regular-expression syntax grammar-constrained decoding cannot enforce "
            "(supported: literals, ., [...] classes, \\d \\w \\s, groups (...) and (?:...), "
            "|, *, +, ?, {m,n}, ^ and $ at the ends; not: backreferences, lookaround, \\b, "
            "named groups, \\D \\W \\S inside a class)",
        param);
  }
  v = rewritten;
  return Status::Ok();
}

// A tuple (prefixItems, or items given as an array): llama.cpp's converter
// makes it exactly that many items, reads "items" instead when both are
// given, and ignores minItems/maxItems beside it.
Status CheckTuple(const json& s, const std::string& where, const std::string& param) {
  const std::string at = "'" + param + "' at " + At(where) + ": ";
  if (s.contains("prefixItems") && s.contains("items")) {
    return Status::InvalidArgument(
        at + "give prefixItems or items, not both (grammar-constrained decoding would ignore "
             "prefixItems)",
        param);
  }
  const char* key = s.contains("prefixItems") ? "prefixItems" : "items";
  if (!s.contains(key) || !s.at(key).is_array()) return Status::Ok();
  const uint64_t n = s.at(key).size();
  const bool too_few = s.contains("minItems") && s.at("minItems").get<uint64_t>() > n;
  const bool too_many = s.contains("maxItems") && s.at("maxItems").get<uint64_t>() < n;
  if (too_few || too_many) {
    return Status::InvalidArgument(at + "the grammar gives exactly the " + std::to_string(n) +
                                       " items of " + key + ", which " +
                                       (too_few ? "minItems" : "maxItems") + " does not allow",
                                   param);
  }
  return Status::Ok();
}

Status Check(json& s, const std::string& where, const std::string& param, Numbers* numbers) {
  if (s.is_boolean()) return Status::Ok();
  if (!s.is_object()) {
    return Status::InvalidArgument("'" + param + "' at " + (where.empty() ? "/" : where) +
                                       " must be a schema (an object), got " + s.dump(),
                                   param);
  }
  for (const auto& [min_key, max_key] :
       {std::pair{"minLength", "maxLength"}, std::pair{"minItems", "maxItems"}}) {
    Status st = CheckCounts(s, where, param, min_key, max_key);
    if (!st.ok()) return st;
  }
  if (Status st = CheckBounds(s, where, param, numbers); !st.ok()) return st;
  if (Status st = CheckTuple(s, where, param); !st.ok()) return st;
  for (auto& [k, v] : s.items()) {
    if (Annotations().count(k)) continue;
    if (!Enforced().count(k)) return Unsupported(param, where, "keyword '" + k + "'");
    const std::string at = where + "/" + k;
    if (k == "pattern") {
      const json before = v;
      Status st = CheckPattern(v, where, param);
      if (!st.ok()) return st;
      numbers->patterns_rewritten = numbers->patterns_rewritten || v != before;
    } else if (k == "format") {
      const std::string f = v.is_string() ? v.get<std::string>() : "";
      const bool uuid = f.size() == 5 && f.rfind("uuid", 0) == 0 && f[4] >= '1' && f[4] <= '5';
      if (f != "date" && f != "time" && f != "date-time" && f != "uuid" && !uuid) {
        return Unsupported(param, where, "format '" + f + "'");
      }
    } else if (k == "properties" || k == "$defs" || k == "definitions") {
      if (!v.is_object()) {
        return Status::InvalidArgument("'" + param + "' at " + at + " must be an object", param);
      }
      Status st = CheckEach(v, at, param, numbers);
      if (!st.ok()) return st;
    } else if (k == "anyOf" || k == "oneOf" || k == "allOf" || k == "prefixItems") {
      if (!v.is_array()) {
        return Status::InvalidArgument("'" + param + "' at " + at + " must be an array", param);
      }
      Status st = CheckEach(v, at, param, numbers);
      if (!st.ok()) return st;
    } else if (k == "items" || k == "additionalProperties") {
      Status st = v.is_array() ? CheckEach(v, at, param, numbers) : Check(v, at, param, numbers);
      if (!st.ok()) return st;
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<ReadySchema> ReadyJsonSchema(const std::string& schema, const std::string& param,
                                      size_t first_number) {
  json parsed = json::parse(schema, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return Status::InvalidArgument("'" + param + "' is not valid JSON", param);
  }
  if (schema.find("__outpost_number_") != std::string::npos) {
    return Status::InvalidArgument("'" + param +
                                       "' holds the text __outpost_number_, which "
                                       "Outpost uses inside its grammars",
                                   param);
  }
  Numbers numbers;
  numbers.first = first_number;
  Status st = Check(parsed, "", param, &numbers);
  if (!st.ok()) return st;
  ReadySchema out;
  out.schema = parsed.dump();
  out.first_number = first_number;
  out.number_rules = std::move(numbers.rules);
  out.changed = numbers.patterns_rewritten || !out.number_rules.empty();
  return out;
}

void SpliceNumberRules(const ReadySchema& ready, std::string* gbnf) {
  for (size_t k = 0; k < ready.number_rules.size(); ++k) {
    const size_t i = ready.first_number + k;
    // The converter writes a const string as a GBNF literal of its JSON text.
    const std::string literal = "\"\\\"" + NumberMarker(i) + "\\\"\"";
    size_t at = gbnf->find(literal);
    if (at == std::string::npos) continue;  // a part of the schema the converter left out
    for (; at != std::string::npos; at = gbnf->find(literal, at)) {
      gbnf->replace(at, literal.size(), NumberRule(i));
    }
    if (!gbnf->empty() && gbnf->back() != '\n') *gbnf += '\n';
    *gbnf += ready.number_rules[k];
  }
}

StatusOr<std::string> JsonSchemaToGrammar(const std::string& schema, const std::string& param) {
  ReadySchema ready;
  OUTPOST_ASSIGN_OR_RETURN(ready, ReadyJsonSchema(schema, param));
  if (const size_t n = util::SchemaAlternatives(schema); n > util::kMaxSchemaAlternatives) {
    return Status::InvalidArgument("'" + param + "' has " + std::to_string(n) +
                                       " enum values and anyOf/oneOf branches in all; at most " +
                                       std::to_string(util::kMaxSchemaAlternatives) +
                                       ": each one is grammar work on every generated "
                                       "token, which every other request on the engine waits for",
                                   param);
  }
  try {
    std::string gbnf = Convert(ready.schema);  // patterns rewritten, numbers marked
    SpliceNumberRules(ready, &gbnf);
    // Patterns' {m,n} (the keywords were checked above), and what only
    // llama.cpp's parser knows it refuses.
    Status st = CheckGrammar(gbnf, param);
    if (!st.ok()) return st;
    return gbnf;
  } catch (const std::exception& e) {
    std::string why = e.what();
    for (auto& c : why) {
      if (c == '\n') c = ' ';
    }
    return Status::InvalidArgument("'" + param + "' cannot be turned into a grammar: " + why,
                                   param);
  }
}

}  // namespace outpost::engine

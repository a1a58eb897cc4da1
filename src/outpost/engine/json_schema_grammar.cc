#include "outpost/engine/json_schema_grammar.h"

#include <json-schema-to-grammar.h>
#include <json.h>

#include <nlohmann/json.hpp>

#include <exception>
#include <set>

namespace outpost::engine {
namespace {

using nlohmann::json;

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
          "anyOf, oneOf, allOf, $ref/$defs, pattern, minLength, maxLength, minimum, maximum, "
          "exclusiveMinimum, exclusiveMaximum, format date|time|date-time|uuid)",
      param);
}

Status Check(const json& s, const std::string& where, const std::string& param);

Status CheckEach(const json& list, const std::string& where, const std::string& param) {
  if (list.is_array()) {
    for (size_t i = 0; i < list.size(); ++i) {
      Status st = Check(list[i], where + "/" + std::to_string(i), param);
      if (!st.ok()) return st;
    }
  } else if (list.is_object()) {
    for (const auto& [k, v] : list.items()) {
      Status st = Check(v, where + "/" + k, param);
      if (!st.ok()) return st;
    }
  }
  return Status::Ok();
}

Status Check(const json& s, const std::string& where, const std::string& param) {
  if (s.is_boolean()) return Status::Ok();
  if (!s.is_object()) {
    return Status::InvalidArgument("'" + param + "' at " + (where.empty() ? "/" : where) +
                                       " must be a schema (an object), got " + s.dump(),
                                   param);
  }
  for (const auto& [k, v] : s.items()) {
    if (Annotations().count(k)) continue;
    if (!Enforced().count(k)) return Unsupported(param, where, "keyword '" + k + "'");
    const std::string at = where + "/" + k;
    if (k == "format") {
      const std::string f = v.is_string() ? v.get<std::string>() : "";
      const bool uuid = f.size() == 5 && f.rfind("uuid", 0) == 0 && f[4] >= '1' && f[4] <= '5';
      if (f != "date" && f != "time" && f != "date-time" && f != "uuid" && !uuid) {
        return Unsupported(param, where, "format '" + f + "'");
      }
    } else if (k == "properties" || k == "$defs" || k == "definitions") {
      if (!v.is_object()) {
        return Status::InvalidArgument("'" + param + "' at " + at + " must be an object", param);
      }
      Status st = CheckEach(v, at, param);
      if (!st.ok()) return st;
    } else if (k == "anyOf" || k == "oneOf" || k == "allOf" || k == "prefixItems") {
      if (!v.is_array()) {
        return Status::InvalidArgument("'" + param + "' at " + at + " must be an array", param);
      }
      Status st = CheckEach(v, at, param);
      if (!st.ok()) return st;
    } else if (k == "items" || k == "additionalProperties") {
      Status st = v.is_array() ? CheckEach(v, at, param) : Check(v, at, param);
      if (!st.ok()) return st;
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::string> JsonSchemaToGrammar(const std::string& schema, const std::string& param) {
  const json parsed = json::parse(schema, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return Status::InvalidArgument("'" + param + "' is not valid JSON", param);
  }
  Status st = Check(parsed, "", param);
  if (!st.ok()) return st;
  try {
    return json_schema_to_grammar(common_json::parse(schema), /*force_gbnf=*/true);
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

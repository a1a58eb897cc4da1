// Small JSON helpers the OpenAI request parsers and response renderers share:
// a field's wrong type named the same way everywhere, model text put on the
// wire without failing on a token that is part of a UTF-8 character, and the
// list object every listing answers with.
// Pure; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "outpost/util/status.h"

namespace outpost::api {

// "null", "a boolean", "a number", "a string", "an array", "an object".
const char* JsonTypeName(const nlohmann::json& v);
// InvalidArgument "'field' must be <want>, got <type>", param = field.
Status WrongType(const std::string& field, const char* want, const nlohmann::json& got);

// j as compact text; invalid UTF-8 from a model is replaced, not fatal (the
// `bytes` of a logprob keep the exact bytes).
std::string DumpLossy(const nlohmann::json& j);
// A string's bytes as an array of numbers (OpenAI's logprob `bytes`).
nlohmann::json ByteArray(const std::string& s);

// OpenAI's metadata: null, or an object of at most 16 pairs whose keys are
// at most 64 characters and values strings of at most 512. Errors:
// InvalidArgument naming `field` (a value: field.key) and the limit.
Status CheckMetadata(const nlohmann::json& m, const std::string& field = "metadata");

// OpenAI's list object: {"object": "list", data, first_id, last_id,
// has_more}, the ids taken from data's first and last entries.
nlohmann::json ListJson(nlohmann::json data, bool has_more);

// One page of `items` (a JSON array of objects with ids, oldest first) as
// the list object, by a listing's query: order (desc, the default, or asc),
// limit (1–100, default 20) and after (an item id; NotFound naming `after`
// and `container` if no item has it). Errors: InvalidArgument naming the
// parameter.
StatusOr<nlohmann::json> ItemPage(nlohmann::json items, const std::string& query,
                                  const std::string& container);

}  // namespace outpost::api

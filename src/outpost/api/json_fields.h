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

// OpenAI's list object: {"object": "list", data, first_id, last_id,
// has_more}, the ids taken from data's first and last entries.
nlohmann::json ListJson(nlohmann::json data, bool has_more);

}  // namespace outpost::api

// Small JSON helpers the OpenAI request parsers and response renderers share:
// a field's wrong type named the same way everywhere, model text put on the
// wire without failing on a token that is part of a UTF-8 character, and the
// list object every listing answers with.
// Pure; thread-safe.
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "outpost/util/status.h"

namespace outpost::api {

// A request body as a JSON object: nesting within util::CheckJsonDepth's
// limit (`what` names it in that error), valid JSON, an object. Errors:
// InvalidArgument "the request body is not valid JSON" / "... must be a JSON
// object" (`what` in place of "the request body").
StatusOr<nlohmann::json> ParseObjectBody(std::string_view body,
                                         const std::string& what = "the request body");

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

// The most members an object read in written order (OrderedMembers) may
// have, one and all: an ordered object finds a key by scanning, so reading
// n members into one costs n^2 / 2 comparisons (measured: 100,000 held a
// worker 26 s); within these caps it is at most a few milliseconds.
inline constexpr size_t kMaxOrderedMembers = 1000;
inline constexpr size_t kMaxOrderedMembersInAll = 20000;

// The members `keys` of the JSON object `body` (its top level; valid JSON,
// as already checked) read again keeping every object's members in written
// order — a schema's properties are the order of the answer's; absent ones
// are left out. Errors: InvalidArgument naming the member (param) when it
// holds an object of more than kMaxOrderedMembers members, or more than
// kMaxOrderedMembersInAll in all.
StatusOr<nlohmann::ordered_json> OrderedMembers(std::string_view body,
                                                std::initializer_list<std::string_view> keys);

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

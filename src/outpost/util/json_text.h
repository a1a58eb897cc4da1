// JSON text from outside, read as text before (or instead of) parsing it:
// how deep it nests, and the start of one closed into whole JSON.
//
// The nesting limit: nlohmann's parser and destructor are iterative, but
// copying and dumping a value, the JSON-schema checks, llama.cpp's
// schema-to-grammar conversion and its Jinja templates all recurse once per
// level: one 180 KB request of 5,000 nested objects overflowed a thread's
// stack and killed the server (2026-12-06). What comes from outside (request
// bodies, batch input lines, a tool call's arguments) is refused past
// kMaxJsonDepth before anything walks it; 128 is serde_json's default limit
// too, and far past what a real schema or message nests (OpenAI's structured
// outputs allow 10 levels).
//
// CloseJsonPrefix is for a tool call's arguments sent back in a conversation
// after max_tokens cut them (Outpost answers such a call with its arguments
// so far, as OpenAI does): chat templates that take arguments as an object
// need JSON, and the closest whole JSON to what the model wrote is the prefix
// with its open string, arrays and objects closed.
//
// Pure functions; thread-safe; time and memory linear in the text.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "outpost/util/status.h"

namespace outpost::util {

inline constexpr int kMaxJsonDepth = 128;

// The deepest nesting of arrays and objects in `text` (JSON, or the start of
// it; brackets inside strings do not count), counted up to limit + 1. Not a
// validator.
int JsonDepth(std::string_view text, int limit = kMaxJsonDepth);

// InvalidArgument (with `param`) saying that `what` nests deeper than
// kMaxJsonDepth, e.g. "the request body nests arrays and objects more than
// 128 levels deep"; Ok when it does not.
Status CheckJsonDepth(std::string_view text, const std::string& what,
                      const std::string& param = {});

// The enum values and anyOf/oneOf branches in a JSON schema `text`, counted
// all through it (0 when it is not JSON). A grammar built from the schema
// tries each of them on every token; engine/json_schema_grammar.h and the
// router's tools check cap them at kMaxSchemaAlternatives (OpenAI's
// structured outputs cap enum values too). REQUIRES: text within
// kMaxJsonDepth (the walk recurses per level).
inline constexpr size_t kMaxSchemaAlternatives = 1000;
size_t SchemaAlternatives(std::string_view text);

// The text of the value of member `key` of the JSON object `text` (its top
// level; the last such member, as a parser keeps), or nullopt when there is
// none. Not a validator: `text` is JSON already checked.
std::optional<std::string_view> JsonMemberText(std::string_view text, std::string_view key);

// Object members in `text` (JSON): in all, and in the largest one object.
struct JsonMembers {
  size_t total = 0;
  size_t most_in_one = 0;
};
JsonMembers CountJsonMembers(std::string_view text);

// `text` itself when it is JSON. Otherwise the prefix closed: an open string
// gets its quote (an escape cut in half is dropped first), open arrays and
// objects their brackets; where that is still not JSON (cut inside a key,
// after a key or a colon, inside a literal such as `tru`), the element being
// written is dropped, back to the last one that was whole. nullopt when
// neither closes into JSON (the text does not start as JSON).
std::optional<std::string> CloseJsonPrefix(const std::string& text);

}  // namespace outpost::util

// CloseJsonPrefix — turns the start of a JSON text into whole JSON by closing
// what it left open. Used for a tool call's arguments sent back in a
// conversation after max_tokens cut them (Outpost answers such a call with
// its arguments so far, as OpenAI does): chat templates that take arguments as
// an object need JSON, and the closest whole JSON to what the model wrote is
// the prefix with its open string, arrays and objects closed.
//
// Pure function; thread-safe.
#pragma once

#include <optional>
#include <string>

namespace outpost::engine {

// `text` itself when it is JSON. Otherwise the prefix closed: an open string
// gets its quote (an escape cut in half is dropped first), open arrays and
// objects their brackets; where that is still not JSON (cut inside a key,
// after a key or a colon, inside a literal such as `tru`), the element being
// written is dropped, back to the last one that was whole. nullopt when no
// prefix of `text` closes into JSON (it does not start as JSON).
std::optional<std::string> CloseJsonPrefix(const std::string& text);

}  // namespace outpost::engine

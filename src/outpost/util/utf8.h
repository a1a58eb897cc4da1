// UTF-8 helpers for streaming detokenization.
//
// Tokens do not respect character boundaries: one emoji can span several
// tokens. Streaming code keeps bytes back until they form whole characters, so
// no SSE chunk ever carries half a character. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string_view>

namespace outpost::util {

// Number of bytes at the end of `s` that form an incomplete (but so far valid)
// UTF-8 sequence and must be held back until more bytes arrive. 0 when `s` ends
// on a character boundary. Invalid bytes are not held back (they are passed on
// as they are; the JSON encoder replaces them).
size_t IncompleteUtf8Tail(std::string_view s);

// True when `s` is entirely valid UTF-8.
bool IsValidUtf8(std::string_view s);

}  // namespace outpost::util

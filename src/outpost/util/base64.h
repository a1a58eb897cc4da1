// Base64 (RFC 4648, standard alphabet, padded): HTTP Basic credentials,
// DSSE envelopes, signatures. Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace outpost::util {

std::string Base64Encode(std::string_view data);
// False for text that is not padded standard Base64 (empty, a length not a
// multiple of 4, a character outside the alphabet).
bool Base64Decode(std::string_view text, std::string* out);

}  // namespace outpost::util

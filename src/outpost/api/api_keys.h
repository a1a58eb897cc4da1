// ApiKeys — the keys that may use the server's API, and the check of one
// presented as "Authorization: Bearer KEY".
//
// Keys come from the config (api_key, api_key_file, $OUTPOST_API_KEY) and,
// when keys are required, also from the routing file's tenants. Comparison
// takes the same time whatever the presented key (no early exit on the
// first differing byte, no dependence on how many keys there are before a
// match). Keys are never logged: errors say which key source failed, never
// a key. Immutable after construction; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "outpost/util/status.h"

namespace outpost::api {

// The key an Authorization header presents: what follows "Bearer ", or the
// whole value when it is not a bearer token.
std::string PresentedKey(const std::string& authorization);

// A key's id, what logs, audit records, owners and kept requests name
// instead of the key: the first 12 hex digits of SHA-256 over it ("" for
// no key).
std::string ApiKeyId(const std::string& key);

class ApiKeys {
 public:
  ApiKeys() = default;  // no keys: every request is allowed
  explicit ApiKeys(std::vector<std::string> keys);

  // One key per line; blank lines and lines starting with '#' are skipped,
  // surrounding whitespace trimmed. Errors: NotFound (unreadable file),
  // InvalidArgument (no key in it), both naming "api_key_file".
  static StatusOr<std::vector<std::string>> ReadFile(const std::string& path);

  bool required() const { return !keys_.empty(); }
  size_t size() const { return keys_.size(); }

  // The Authorization header's value. OK when keys are not required or it is
  // "Bearer K" for a known K; else Unauthenticated saying what was wrong
  // (missing, not a bearer token, or not a known key).
  Status Check(std::string_view authorization) const;

  // The known key whose ApiKeyId is `id`; "" when none is.
  std::string KeyWithId(const std::string& id) const;

 private:
  std::vector<std::string> keys_;
};

}  // namespace outpost::api

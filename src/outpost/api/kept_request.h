// Kept requests — a request stored to run later with no client present: a
// background response, asked again after a restart (responses.db), and a
// batch's lines (batches.db). What is kept is the body and the headers that
// decide how it runs (identity, class, routing, session).
//
// The bearer key is never kept: its id (ApiKeyId, a hash prefix) is, as the
// header X-Outpost-Key-Id, and it becomes `Authorization: Bearer KEY` again
// only when it runs and a key with that id is still known (a configured key
// or a tenant's). A key revoked meanwhile runs nothing: the request runs with
// no key, which the server refuses where keys are required. The id header is
// read only from what the server kept, never from a client's request (it is
// not among the headers kept, and nothing else reads it). A request kept by
// an older version, with its Authorization header, is restored as it is.
#pragma once

#include <functional>
#include <initializer_list>
#include <string>

#include <nlohmann/json.hpp>

#include "outpost/api/http_message.h"

namespace outpost::api {

inline constexpr char kKeptKeyIdHeader[] = "X-Outpost-Key-Id";

// The headers `names` that `req` has, as a JSON object of strings; an
// `Authorization` among them is kept as kKeptKeyIdHeader: its key's id.
nlohmann::json KeepHeaders(const HttpRequest& req, std::initializer_list<const char*> names);

// The key with a given id, "" when none is known.
using KeyLookup = std::function<std::string(const std::string& id)>;

// Adds the kept headers to `req` (values that are not strings are
// skipped); kKeptKeyIdHeader becomes `Authorization: Bearer KEY` when
// `key_with_id` knows the key, and nothing when it does not.
void RestoreHeaders(const nlohmann::json& kept, const KeyLookup& key_with_id, HttpRequest* req);

}  // namespace outpost::api

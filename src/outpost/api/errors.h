// OpenAI-shaped errors: {"error":{"message","type","param","code"}}.
//
// Maps outpost::Status codes onto HTTP status codes and OpenAI error types in
// one place, so every endpoint reports the same failure the same way. Pure.
#pragma once

#include <string>

#include "outpost/api/http_message.h"
#include "outpost/util/status.h"

namespace outpost::api {

int HttpStatusFor(StatusCode code);

// The JSON body for a failed request.
std::string ErrorBody(const Status& status);

// The error envelope with the status's HTTP code (and Retry-After).
void SendError(HttpResponse& res, const Status& st);

// 405 for a method `req.path` does not take: the error body naming the
// methods it does (`allow`, also the Allow header), then `hint` if any.
void SendNotAllowed(HttpResponse& res, const HttpRequest& req, const std::string& allow,
                    const std::string& hint = "");

}  // namespace outpost::api

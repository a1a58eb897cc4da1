// OpenAI-shaped errors: {"error":{"message","type","param","code"}}.
//
// Maps outpost::Status codes onto HTTP status codes and OpenAI error types in
// one place, so every endpoint reports the same failure the same way. Pure.
#pragma once

#include <string>

#include "outpost/util/status.h"

namespace outpost::api {

int HttpStatusFor(StatusCode code);

// The JSON body for a failed request.
std::string ErrorBody(const Status& status);

}  // namespace outpost::api

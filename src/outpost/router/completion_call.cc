#include "outpost/router/completion_call.h"

namespace outpost::router {

const char* EndpointPath(Endpoint e) {
  switch (e) {
    case Endpoint::kChat:
      return "/v1/chat/completions";
    case Endpoint::kCompletion:
      return "/v1/completions";
    case Endpoint::kResponses:
      return "/v1/responses";
  }
  return "/v1/chat/completions";
}

}  // namespace outpost::router

#include "outpost/router/completion_call.h"

namespace outpost::router {

const char* EndpointPath(Endpoint e) {
  return e == Endpoint::kChat ? "/v1/chat/completions" : "/v1/completions";
}

}  // namespace outpost::router

// UpstreamTarget — sends one call to one upstream and relays its answer into a
// ResponseSink. Retries happen only before anything reached the sink: a
// refused or failed connection, a first-byte timeout, or a 5xx head makes
// Try() return false and the dispatcher tries its next target. After the
// head, the body goes to the sink as it arrives (streams chunk by chunk); an
// upstream that dies mid-stream ends the answer with an error instead of
// hanging it. Circuit breaker and outlier reports go to the Cluster.
//
// Plain-HTTP whole-body answers go through Http1Client (one send, one socket
// pool); TLS and streams through cpp-httplib's pool (proxy.h). Thread-safe.
#pragma once

#include <memory>
#include <string>

#include "outpost/router/completion_call.h"
#include "outpost/router/dispatcher.h"
#include "outpost/router/response_sink.h"
#include "outpost/router/router.h"

namespace outpost::router {

class UpstreamTarget {
 public:
  // `router` must outlive this object.
  explicit UpstreamTarget(Router* router);

  // True when upstream `id` took the call (the sink has its route and answer
  // or a relay is running: *in_flight then holds it). False when it failed
  // before sending anything, with the cause in *last_error.
  bool Try(UpstreamId id, const CompletionCall& call, const RouteReason& reason, bool stream,
           const std::shared_ptr<ResponseSink>& sink, std::unique_ptr<InFlight>* in_flight,
           Status* last_error);

 private:
  Router* const router_;
};

}  // namespace outpost::router

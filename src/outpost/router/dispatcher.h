// Dispatcher — owns one completion call from the routing decision to its last
// byte: data class, policy, the target loop with failover before the first
// byte, circuit-breaker and outlier accounting, the local scheduler, and the
// confidence cascade. api/ parses a request into a CompletionCall and hands it
// here with a ResponseSink; a batch worker will do the same with a JSONL sink.
//
// Threads: Dispatch() runs the decision (and any whole-body upstream exchange,
// and a cascade's local answer) on the caller's thread and returns once the
// call is handed to its target. What follows reaches the sink from the engine
// thread (local answers) or the relay thread (streamed upstream answers).
#pragma once

#include <memory>

#include "outpost/router/completion_call.h"
#include "outpost/router/response_sink.h"

namespace outpost::router {

// Work that runs on after Dispatch() returned (a streamed upstream relay).
// Destroying it cancels that work and waits until it no longer touches the
// sink. Keep it until the sink has had its last call.
class InFlight {
 public:
  virtual ~InFlight() = default;
};

class Dispatcher {
 public:
  virtual ~Dispatcher() = default;
  // Routes and starts `call`; the sink gets its answer (response_sink.h).
  // Returns the work still running, or null when the sink alone is enough
  // (local answers: cancel through the sink's Cancelled()).
  virtual std::unique_ptr<InFlight> Dispatch(CompletionCall call,
                                             std::shared_ptr<ResponseSink> sink) = 0;
};

}  // namespace outpost::router

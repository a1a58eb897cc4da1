// LocalTarget — answers a call on this node: finds the served model, turns
// the request into a scheduler::GenerationRequest (through the scheduler's
// Prepare: chat template, tokenizer, vocabulary checks) and submits it with
// the caller's sink. This is the router's only way to the scheduler.
// Thread-safe; holds no state of its own.
#pragma once

#include <memory>

#include "outpost/models/serving_set.h"
#include "outpost/router/completion_call.h"
#include "outpost/router/response_sink.h"
#include "outpost/scheduler/request.h"

namespace outpost::router {

class LocalTarget {
 public:
  explicit LocalTarget(const models::ServingSet* serving) : serving_(serving) {}

  // The model `call` names (during a canary, the version its sticky key
  // draws), or null when this node does not serve it.
  std::shared_ptr<const models::ServedModel> Find(const CompletionCall& call) const {
    return serving_->Find(call.request.model, call.sticky_key());
  }

  // Builds the generation request: prompt tokens, sampling, stops, priority.
  // Errors: as Scheduler::Prepare (a template that rejects the messages, token
  // ids outside the vocabulary).
  static Status Prepare(const models::ServedModel& model, const CompletionCall& call,
                        scheduler::GenerationRequest* gen);

  // Hands `gen` to the model's scheduler; the answer goes to `sink`
  // (OnLocalStart, then OnText/OnDone from the engine thread, or OnError when
  // the scheduler refuses it). How it ended is recorded in model.outcomes.
  static void Run(const models::ServedModel& model, scheduler::GenerationRequest gen,
                  const std::shared_ptr<ResponseSink>& sink);

 private:
  const models::ServingSet* const serving_;
};

}  // namespace outpost::router

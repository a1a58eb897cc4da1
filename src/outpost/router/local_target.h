// LocalTarget — answers a call on this node: finds the served model, turns
// the request into a scheduler::GenerationRequest (through the scheduler's
// Prepare: chat template, tokenizer, vocabulary checks) and submits it with
// the caller's sink. This is the router's only way to the scheduler.
// Thread-safe; holds no state of its own.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "outpost/models/serving_set.h"
#include "outpost/router/completion_call.h"
#include "outpost/router/response_sink.h"
#include "outpost/scheduler/request.h"

namespace outpost::router {

class ShadowCompare;

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

  // The model's tokenizer on `text`, as a prompt sent as text is read:
  // `add_special` adds what the model's metadata puts around a text (BOS),
  // `parse_special` reads control-token text ("<|im_start|>") as that token.
  static std::vector<engine::Token> Tokenize(const models::ServedModel& model,
                                             std::string_view text, bool add_special,
                                             bool parse_special);

  // The text of each of `tokens` (a control token's text included; a piece
  // may end inside a UTF-8 character that the next one completes). Errors:
  // InvalidArgument naming `field`[i] for an id outside the vocabulary.
  static StatusOr<std::vector<std::string>> Pieces(const models::ServedModel& model,
                                                   const std::vector<engine::Token>& tokens,
                                                   const std::string& field);

  // Tokens a session holds, prompt and completion together.
  static int32_t ContextLength(const models::ServedModel& model);
  // Token ids run from 0 to this, exclusive.
  static int32_t VocabSize(const models::ServedModel& model);

  // Hands `gen` to the model's scheduler; the answer goes to `sink`
  // (OnLocalStart, then OnText/OnDone from the engine thread, or OnError when
  // the scheduler refuses it). How it ended is recorded in model.outcomes.
  // `compare` (from Mirror) receives the answer too.
  static void Run(const models::ServedModel& model, scheduler::GenerationRequest gen,
                  const std::shared_ptr<ResponseSink>& sink,
                  std::shared_ptr<ShadowCompare> compare = nullptr);

  // The canary's shadow phase: when the serving set draws this request for
  // the shadow sample of `served`'s id, and there is spare capacity (nothing
  // queued for `served`, the candidate idle), the same call goes to the
  // candidate at batch priority; its answer is dropped and its outcome
  // recorded in the candidate's outcomes, as a canary's would be. Returns
  // what Run needs to compare the two answers (greedy requests only), or
  // null when nothing was mirrored. Never fails the caller's request.
  std::shared_ptr<ShadowCompare> Mirror(const models::ServedModel& served,
                                        const CompletionCall& call,
                                        const scheduler::GenerationRequest& gen) const;

 private:
  const models::ServingSet* const serving_;
};

}  // namespace outpost::router

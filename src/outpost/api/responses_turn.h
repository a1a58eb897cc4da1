// The parts of a Responses turn that its three files share:
// responses_handler.cc (POST /v1/responses: prepare, run, input_tokens),
// responses_background.cc (background: true) and responses_stored.cc
// (GET/DELETE /v1/responses/{id}, input_items, cancel). Not for other
// modules.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "outpost/api/conversation_store.h"
#include "outpost/api/http_server.h"
#include "outpost/api/response_store.h"
#include "outpost/api/responses_request.h"
#include "outpost/api/responses_response.h"
#include "outpost/router/completion_call.h"
#include "outpost/util/clock.h"
#include "outpost/util/random.h"
#include "outpost/util/status.h"

namespace outpost::models {
struct ServedModel;
}

namespace outpost::api {

// Keeps an answered Response: stored, its output items joining the
// conversation so far; and in its conversation, after this input. Copies
// share the conversation's hold. Called on the thread that finishes the
// answer; the store and the conversation store are thread-safe.
struct Keeper {
  ResponseStore* store = nullptr;              // null: the response is not stored
  ConversationStore* conversations = nullptr;  // null: no conversation
  std::string owner, input_items, context, conversation_id;
  // The conversation's hold, shared by every copy: released once the answer
  // is in it (before its last byte goes out, so the next turn finds the
  // conversation free), or when the last copy goes (the turn failed).
  std::shared_ptr<ConversationHold> hold;
  int64_t retention_s = 0;
  const util::Clock* clock = nullptr;

  bool active() const { return store != nullptr || conversations != nullptr; }

  // The turn ended without an answer to keep.
  void Release() const {
    if (hold != nullptr) hold->Release();
  }

  // `response` (a Response object) kept if it is a whole answer (completed
  // or incomplete); the hold released either way. Failures to store are
  // logged: the answer still goes to its client.
  void operator()(const std::string& response) const;

 private:
  void AddToConversation(const nlohmann::json& output) const;
};

// One Responses turn, read and ready to run (its conversation held).
struct HttpServer::ResponseTurn {
  Keeper keep;
  router::CompletionCall call;
  ResponseInfo info;
  bool background = false;
  bool resumed = false;  // a background run again after a restart: its record is kept, whatever
  bool counted = true;   // a stream's end counts the request (a background run's does not)
};

// A stored Response's status ("" if it has none).
std::string StatusOf(const std::string& response);

// queued or in_progress: a background response without its end yet.
bool Unfinished(const std::string& status);

// A body read with the owner's stored responses behind previous_response_id
// and conversations behind conversation (either store may be null). With
// `hold`, the conversation is held (*hold) before its items are read: a
// turn answers from a conversation no other turn changes meanwhile.
// Errors: ParseResponsesRequest's, the stores' (NotFound naming the
// parameter), InvalidArgument for a previous response that has not ended,
// InvalidArgument with code conversation_locked for a held conversation.
StatusOr<ResponsesRequest> ParseResponseBody(const std::string& body, ResponseStore* store,
                                             ConversationStore* conversations,
                                             const std::string& owner, const util::Clock* clock,
                                             util::Random* random,
                                             std::shared_ptr<ConversationHold>* hold);

// truncation: "auto" — OpenAI drops items from the start of the
// conversation until the input fits the model's context. For a model served
// here: the oldest turns after the leading system messages (instructions)
// go, until the prompt and max_output_tokens (at least one token) fit one
// session; the conversation then starts at a user message (templates that
// insist on alternating turns), and the last message always stays (if it
// alone does not fit, the usual 400 follows). Errors: Prepare's.
Status TruncateToFit(const models::ServedModel& model, router::CompletionCall* call);

}  // namespace outpost::api

// The Conversations API — OpenAI's /v1/conversations: create (with up to 20
// items and metadata), retrieve, update (metadata), delete; and a
// conversation's items: list, add (up to 20 at a time), retrieve, delete.
// A Responses request naming a conversation reads its items and adds its
// input and answer to it (responses_handler.cc).
//
// Items are checked as a Responses request's input items are (an
// item_reference becomes the item it names: one of this conversation's, or
// of a stored response), and kept as
// `input_items` lists them (typed, content as parts, an id each). Every
// conversation belongs to the API key that made it ("" without keys);
// another key's are 404s. State lives in a ConversationStore; without one
// (responses_retention: 0) every path is a 404 that says why. Adding or
// deleting items while a response is being made in the conversation is a
// 400 conversation_locked, as a second turn is (ConversationStore::Hold).
//
// Thread-safety: ServeConversations runs on any HTTP worker; the store is
// thread-safe.
#pragma once

#include <string>

#include "outpost/api/conversation_store.h"
#include "outpost/api/http_message.h"
#include "outpost/api/response_store.h"
#include "outpost/util/clock.h"
#include "outpost/util/random.h"

namespace outpost::api {

// /v1/conversations and below.
bool IsConversationsPath(const std::string& path);

// `owner`: the caller's key id ("" when the API is open). `store` may be
// null; `responses` (null: none) resolves an item_reference in new items
// that is not the conversation's own.
void ServeConversations(ConversationStore* store, ResponseStore* responses, const HttpRequest& req,
                        HttpResponse& res, const std::string& owner, const util::Clock& clock,
                        util::Random& random);

}  // namespace outpost::api

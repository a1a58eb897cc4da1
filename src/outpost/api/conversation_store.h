// ConversationStore — OpenAI's Conversations API state in one SQLite file
// (<state_dir>/conversations.db; WAL, synchronous=FULL): conversations
// (id, owner, metadata) and their items in the order they were added, so a
// Responses request naming a conversation reads it whole and its answer is
// appended to it.
//
// Items are kept as the JSON objects the API lists (each with an "id"; the
// caller assigns them). Records belong to an owner (the API key's id, ""
// without keys); another owner's ids are NotFound. A conversation lives
// until it is deleted or has been idle — no item added, no metadata set —
// for `idle_s` (OpenAI keeps them until deleted; a box keeps them as long as
// responses_retention says), then reads as NotFound and is deleted with its
// items by the next Create().
//
// A Responses turn holds its conversation (Hold) from reading the items to
// adding its own, so a second turn on it at the same time is refused rather
// than answered from a conversation the first is about to change.
//
// Thread-safety: all methods lock one mutex; safe from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "outpost/util/sqlite.h"
#include "outpost/util/status.h"
#include "outpost/util/thread_annotations.h"

namespace outpost::api {

struct StoredConversation {
  std::string id;  // "conv_..."
  std::string owner;
  int64_t created_at = 0;
  std::string metadata = "{}";  // a JSON object of strings
};

struct ConversationItem {
  std::string id;    // the item's "id"
  std::string item;  // the item (a JSON object)
};

// A turn's claim on one conversation, from reading its items to adding what
// it made (ConversationStore::Hold). Released by Release() or the
// destructor, whichever comes first; may outlive the store.
// Thread-safety: safe from any thread.
class ConversationHold {
 public:
  struct Held {
    std::mutex mu;
    std::set<std::string> ids OUTPOST_GUARDED_BY(mu);
  };
  ConversationHold(std::shared_ptr<Held> held, std::string id)
      : held_(std::move(held)), id_(std::move(id)) {}
  ~ConversationHold() { Release(); }
  ConversationHold(const ConversationHold&) = delete;
  ConversationHold& operator=(const ConversationHold&) = delete;
  void Release();

 private:
  std::shared_ptr<Held> held_;
  const std::string id_;
  std::atomic<bool> released_{false};
};

class ConversationStore {
 public:
  // One process at a time (a lock beside the file). Errors: Unavailable
  // naming the path.
  static StatusOr<std::unique_ptr<ConversationStore>> Open(const std::string& path, int64_t idle_s);

  // Creates c (c.id must be new) holding `items`, and deletes what was idle
  // past its time before `now`. ResourceExhausted on a full disk.
  Status Create(const StoredConversation& c, const std::vector<ConversationItem>& items,
                int64_t now);
  // NotFound (param `param`) for an unknown, expired, deleted or other
  // owner's id; every method below answers the same for such an id.
  StatusOr<StoredConversation> Get(const std::string& owner, const std::string& id, int64_t now,
                                   const std::string& param = "conversation_id");
  Status SetMetadata(const std::string& owner, const std::string& id, const std::string& metadata,
                     int64_t now);
  // The conversation and its items.
  Status Delete(const std::string& owner, const std::string& id, int64_t now);
  // Adds items after the last one, in order, in one transaction.
  Status Append(const std::string& owner, const std::string& id,
                const std::vector<ConversationItem>& items, int64_t now,
                const std::string& param = "conversation_id");
  // Every item, oldest first.
  StatusOr<std::vector<ConversationItem>> Items(const std::string& owner, const std::string& id,
                                                int64_t now,
                                                const std::string& param = "conversation_id");
  // The item `item_id` (the latest, if a client gave two the same id).
  // NotFound (param item_id) when the conversation has none.
  StatusOr<ConversationItem> Item(const std::string& owner, const std::string& id,
                                  const std::string& item_id, int64_t now);
  // Every item with id `item_id`; NotFound as Item().
  Status DeleteItem(const std::string& owner, const std::string& id, const std::string& item_id,
                    int64_t now);
  // Conversations held (idle ones not yet deleted included).
  int64_t Count() const;

  // Claims `id` for one turn: while the hold lives, another Hold() on it is
  // refused — InvalidArgument with error code "conversation_locked" (param
  // `param`), OpenAI's answer to a second request on a conversation that is
  // answering one — so turns cannot interleave. Reads and metadata are not
  // held off. NotFound as Get().
  StatusOr<std::shared_ptr<ConversationHold>> Hold(const std::string& owner, const std::string& id,
                                                   int64_t now,
                                                   const std::string& param = "conversation");

 private:
  ConversationStore(std::unique_ptr<util::SqliteDb> db, int64_t idle_s)
      : db_(std::move(db)), idle_s_(idle_s) {}
  // OK if `id` is the owner's and alive; NotFound (param) otherwise.
  Status Check(const std::string& owner, const std::string& id, int64_t now,
               const std::string& param) OUTPOST_REQUIRES(mu_);
  // Marks `id` used at `now`: it lives idle_s_ longer.
  Status Touch(const std::string& id, int64_t now) OUTPOST_REQUIRES(mu_);

  mutable std::mutex mu_;
  std::unique_ptr<util::SqliteDb> db_ OUTPOST_GUARDED_BY(mu_);
  const int64_t idle_s_;
  const std::shared_ptr<ConversationHold::Held> held_ = std::make_shared<ConversationHold::Held>();
};

}  // namespace outpost::api

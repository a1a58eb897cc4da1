// ResponseStore — the Responses API's stored responses in one SQLite file
// (<state_dir>/responses.db; WAL, synchronous=FULL), so that a later request
// can continue one (previous_response_id) and a client can retrieve, list
// the input of, or delete it.
//
// Each record keeps what the next turn needs whole: `context`, every item
// of the conversation so far (the earlier turns' items, this request's
// input, this answer's output), so continuing a response never walks a
// chain whose older links may have expired. Instructions are not items:
// they are not carried over, as OpenAI's API defines it.
//
// Records belong to an owner (the API key's id, "" without keys); another
// owner's ids are NotFound. A record lives until expires_at, then reads as
// NotFound and is deleted by the next Put(). Its items are indexed by id, so
// a later request can name one (item_reference) instead of sending it.
//
// Thread-safety: all methods lock one mutex; safe from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "outpost/util/sqlite.h"
#include "outpost/util/status.h"
#include "outpost/util/thread_annotations.h"

namespace outpost::api {

struct StoredResponse {
  std::string id;  // the Response's id ("resp_...")
  std::string owner;
  int64_t created_at = 0;
  int64_t expires_at = 0;
  std::string response;     // the Response object (JSON)
  std::string input_items;  // this request's input items, each with an id (JSON array)
  std::string context;      // every item so far, output included (JSON array)
  // The items this response brought — its input items and its output items
  // — by id, for item_reference: (id, the item as JSON).
  std::vector<std::pair<std::string, std::string>> items;
  // A background response without its end yet: the request that runs it
  // again after a restart ({"body", "headers"}, JSON); "" otherwise.
  std::string request;
};

class ResponseStore {
 public:
  // One process at a time (a lock beside the file). A background response
  // the last process left queued or in_progress with no `request` to run
  // it again is marked failed; those with one are Unfinished(). Errors:
  // Unavailable naming the path.
  static StatusOr<std::unique_ptr<ResponseStore>> Open(const std::string& path);

  // Every owner's live background responses still queued or in_progress
  // with a `request`, oldest first: what a start runs again.
  StatusOr<std::vector<StoredResponse>> Unfinished(int64_t now);

  // Adds or replaces r.id (its items too), and deletes what expired before
  // `now`. ResourceExhausted on a full disk.
  Status Put(const StoredResponse& r, int64_t now);
  // An item a live stored response of `owner` brought (the latest, if two
  // had the same id). NotFound (param `param`) otherwise.
  StatusOr<std::string> Item(const std::string& owner, const std::string& item_id, int64_t now,
                             const std::string& param);
  // NotFound (param `param`) for an unknown, expired or other owner's id.
  StatusOr<StoredResponse> Get(const std::string& owner, const std::string& id, int64_t now,
                               const std::string& param = "response_id");
  // NotFound as Get().
  Status Delete(const std::string& owner, const std::string& id, int64_t now);
  // Records held (expired ones not yet deleted included).
  int64_t Count() const;

 private:
  explicit ResponseStore(std::unique_ptr<util::SqliteDb> db) : db_(std::move(db)) {}
  // *purged: whether expired records were deleted on the way.
  Status PutLocked(const StoredResponse& r, int64_t now, bool* purged) OUTPOST_REQUIRES(mu_);

  mutable std::mutex mu_;
  std::unique_ptr<util::SqliteDb> db_ OUTPOST_GUARDED_BY(mu_);
};

}  // namespace outpost::api

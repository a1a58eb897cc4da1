#include "outpost/api/conversation_store.h"

#include "outpost/util/status_macros.h"

namespace outpost::api {
namespace {

using util::Stmt;

constexpr const char* kSchema[] = {
    "CREATE TABLE IF NOT EXISTS conversations(id TEXT PRIMARY KEY, owner TEXT NOT NULL, "
    "created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, metadata TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS conversations_by_expiry ON conversations(expires_at)",
    "CREATE TABLE IF NOT EXISTS conversation_items(conversation TEXT NOT NULL, seq INTEGER NOT "
    "NULL, id TEXT NOT NULL, item TEXT NOT NULL, PRIMARY KEY(conversation, seq))",
    "CREATE INDEX IF NOT EXISTS conversation_items_by_id ON conversation_items(conversation, id)",
};

Status NoSuchConversation(const std::string& id, const std::string& param) {
  return Status::NotFound("no conversation with id '" + id +
                              "' (never created, deleted, idle past its retention, or another "
                              "key's)",
                          param);
}

Status InsertItems(util::SqliteDb* db, const std::string& conversation,
                   const std::vector<ConversationItem>& items) {
  Stmt last(db->get(),
            "SELECT COALESCE(MAX(seq), 0) FROM conversation_items WHERE conversation = ?");
  last.Bind(1, conversation);
  int64_t seq = last.Step() == SQLITE_ROW ? last.Int(0) : 0;
  for (const ConversationItem& item : items) {
    Stmt s(db->get(),
           "INSERT INTO conversation_items(conversation, seq, id, item) VALUES(?,?,?,?)");
    s.Bind(1, conversation);
    s.Bind(2, ++seq);
    s.Bind(3, item.id);
    s.Bind(4, item.item);
    OUTPOST_RETURN_IF_ERROR(s.Run());
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<ConversationStore>> ConversationStore::Open(const std::string& path,
                                                                     int64_t idle_s) {
  // Incremental vacuum, as the response store: deleted conversations give
  // their pages back to the disk.
  auto db = util::SqliteDb::Open(path, "conversation store", /*exclusive=*/true, kSchema,
                                 /*incremental_vacuum=*/true);
  if (!db.ok()) return db.status();
  return std::unique_ptr<ConversationStore>(new ConversationStore(std::move(db).value(), idle_s));
}

Status ConversationStore::Check(const std::string& owner, const std::string& id, int64_t now,
                                const std::string& param) {
  Stmt s(db_->get(), "SELECT 1 FROM conversations WHERE id = ? AND owner = ? AND expires_at > ?");
  s.Bind(1, id);
  s.Bind(2, owner);
  s.Bind(3, now);
  if (s.Step() != SQLITE_ROW) return NoSuchConversation(id, param);
  return Status::Ok();
}

Status ConversationStore::Touch(const std::string& id, int64_t now) {
  Stmt s(db_->get(), "UPDATE conversations SET expires_at = ? WHERE id = ?");
  s.Bind(1, now + idle_s_);
  s.Bind(2, id);
  return s.Run();
}

Status ConversationStore::Create(const StoredConversation& c,
                                 const std::vector<ConversationItem>& items, int64_t now) {
  std::lock_guard<std::mutex> lock(mu_);
  bool purged = false;
  Status st = db_->InTransaction([&]() -> Status {
    OUTPOST_RETURN_IF_ERROR(db_->Exec(
        "DELETE FROM conversation_items WHERE conversation IN (SELECT id FROM conversations "
        "WHERE expires_at <= " +
        std::to_string(now) +
        "); DELETE FROM conversations WHERE expires_at <= " + std::to_string(now)));
    purged = db_->Changes() > 0;
    Stmt s(db_->get(),
           "INSERT INTO conversations(id, owner, created_at, expires_at, metadata) "
           "VALUES(?,?,?,?,?)");
    s.Bind(1, c.id);
    s.Bind(2, c.owner);
    s.Bind(3, c.created_at);
    s.Bind(4, now + idle_s_);
    s.Bind(5, c.metadata);
    OUTPOST_RETURN_IF_ERROR(s.Run());
    return InsertItems(db_.get(), c.id, items);
  });
  if (purged) db_->IncrementalVacuum();
  return st;
}

StatusOr<StoredConversation> ConversationStore::Get(const std::string& owner, const std::string& id,
                                                    int64_t now, const std::string& param) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_->get(),
         "SELECT created_at, metadata FROM conversations WHERE id = ? AND owner = ? AND "
         "expires_at > ?");
  s.Bind(1, id);
  s.Bind(2, owner);
  s.Bind(3, now);
  if (s.Step() != SQLITE_ROW) return NoSuchConversation(id, param);
  StoredConversation c;
  c.id = id;
  c.owner = owner;
  c.created_at = s.Int(0);
  c.metadata = s.Text(1);
  return c;
}

Status ConversationStore::SetMetadata(const std::string& owner, const std::string& id,
                                      const std::string& metadata, int64_t now) {
  std::lock_guard<std::mutex> lock(mu_);
  OUTPOST_RETURN_IF_ERROR(Check(owner, id, now, "conversation_id"));
  Stmt s(db_->get(), "UPDATE conversations SET metadata = ?, expires_at = ? WHERE id = ?");
  s.Bind(1, metadata);
  s.Bind(2, now + idle_s_);
  s.Bind(3, id);
  return s.Run();
}

Status ConversationStore::Delete(const std::string& owner, const std::string& id, int64_t now) {
  std::lock_guard<std::mutex> lock(mu_);
  OUTPOST_RETURN_IF_ERROR(Check(owner, id, now, "conversation_id"));
  OUTPOST_RETURN_IF_ERROR(db_->InTransaction([&]() -> Status {
    Stmt items(db_->get(), "DELETE FROM conversation_items WHERE conversation = ?");
    items.Bind(1, id);
    OUTPOST_RETURN_IF_ERROR(items.Run());
    Stmt s(db_->get(), "DELETE FROM conversations WHERE id = ?");
    s.Bind(1, id);
    return s.Run();
  }));
  db_->IncrementalVacuum();
  return Status::Ok();
}

Status ConversationStore::Append(const std::string& owner, const std::string& id,
                                 const std::vector<ConversationItem>& items, int64_t now,
                                 const std::string& param) {
  std::lock_guard<std::mutex> lock(mu_);
  OUTPOST_RETURN_IF_ERROR(Check(owner, id, now, param));
  return db_->InTransaction([&]() -> Status {
    OUTPOST_RETURN_IF_ERROR(InsertItems(db_.get(), id, items));
    return Touch(id, now);
  });
}

StatusOr<std::vector<ConversationItem>> ConversationStore::Items(const std::string& owner,
                                                                 const std::string& id, int64_t now,
                                                                 const std::string& param) {
  std::lock_guard<std::mutex> lock(mu_);
  OUTPOST_RETURN_IF_ERROR(Check(owner, id, now, param));
  Stmt s(db_->get(), "SELECT id, item FROM conversation_items WHERE conversation = ? ORDER BY seq");
  s.Bind(1, id);
  std::vector<ConversationItem> out;
  while (s.Step() == SQLITE_ROW) out.push_back({s.Text(0), s.Text(1)});
  return out;
}

StatusOr<ConversationItem> ConversationStore::Item(const std::string& owner, const std::string& id,
                                                   const std::string& item_id, int64_t now) {
  std::lock_guard<std::mutex> lock(mu_);
  OUTPOST_RETURN_IF_ERROR(Check(owner, id, now, "conversation_id"));
  Stmt s(db_->get(),
         "SELECT item FROM conversation_items WHERE conversation = ? AND id = ? ORDER BY seq DESC "
         "LIMIT 1");
  s.Bind(1, id);
  s.Bind(2, item_id);
  if (s.Step() != SQLITE_ROW) {
    return Status::NotFound("no item with id '" + item_id + "' in the conversation '" + id + "'",
                            "item_id");
  }
  return ConversationItem{item_id, s.Text(0)};
}

Status ConversationStore::DeleteItem(const std::string& owner, const std::string& id,
                                     const std::string& item_id, int64_t now) {
  std::lock_guard<std::mutex> lock(mu_);
  OUTPOST_RETURN_IF_ERROR(Check(owner, id, now, "conversation_id"));
  Stmt s(db_->get(), "DELETE FROM conversation_items WHERE conversation = ? AND id = ?");
  s.Bind(1, id);
  s.Bind(2, item_id);
  OUTPOST_RETURN_IF_ERROR(s.Run());
  if (db_->Changes() == 0) {
    return Status::NotFound("no item with id '" + item_id + "' in the conversation '" + id + "'",
                            "item_id");
  }
  return Touch(id, now);
}

void ConversationHold::Release() {
  if (released_.exchange(true)) return;
  std::lock_guard<std::mutex> lock(held_->mu);
  held_->ids.erase(id_);
}

StatusOr<std::shared_ptr<ConversationHold>> ConversationStore::Hold(const std::string& owner,
                                                                    const std::string& id,
                                                                    int64_t now,
                                                                    const std::string& param) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    OUTPOST_RETURN_IF_ERROR(Check(owner, id, now, param));
  }
  std::lock_guard<std::mutex> lock(held_->mu);
  if (!held_->ids.insert(id).second) {
    return Status::InvalidArgument("another request is operating on the conversation '" + id +
                                       "' (a response being made in it, or items being "
                                       "changed); retry when it has finished",
                                   param)
        .WithErrorCode("conversation_locked");
  }
  return std::make_shared<ConversationHold>(held_, id);
}

int64_t ConversationStore::Count() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_->get(), "SELECT COUNT(*) FROM conversations");
  return s.Step() == SQLITE_ROW ? s.Int(0) : 0;
}

}  // namespace outpost::api

#include "outpost/api/conversations_api.h"

#include <nlohmann/json.hpp>
#include <vector>

#include "outpost/api/errors.h"
#include "outpost/api/json_fields.h"
#include "outpost/api/openai_response.h"
#include "outpost/api/responses_request.h"
#include "outpost/util/status_macros.h"

namespace outpost::api {
namespace {

using nlohmann::json;

constexpr std::string_view kRoot = "/v1/conversations";
constexpr size_t kMaxItemsAtOnce = 20;  // OpenAI's limit per create call

json ConversationJson(const StoredConversation& c) {
  json metadata = json::parse(c.metadata, nullptr, false);
  if (!metadata.is_object()) metadata = json::object();
  return {{"id", c.id},
          {"object", "conversation"},
          {"created_at", c.created_at},
          {"metadata", std::move(metadata)}};
}

// The body as a JSON object. Errors: InvalidArgument.
StatusOr<json> BodyObject(const std::string& body) {
  return ParseObjectBody(body.empty() ? std::string_view("{}") : std::string_view(body));
}

// `items` as the store keeps them: item_references resolved (`lookup`),
// checked, listed, at most 20. `required`: absent or empty is an error.
StatusOr<std::vector<ConversationItem>> NewItems(const json& body, bool required,
                                                 util::Random& random, const ItemLookup& lookup,
                                                 json* listed) {
  auto it = body.find("items");
  if (it == body.end() || it->is_null() || (it->is_array() && it->empty())) {
    if (required) return Status::InvalidArgument("'items' must hold at least one item", "items");
    *listed = json::array();
    return std::vector<ConversationItem>();
  }
  if (it->is_array() && it->size() > kMaxItemsAtOnce) {
    return Status::InvalidArgument("'items' holds at most " + std::to_string(kMaxItemsAtOnce) +
                                       " items at a time, got " + std::to_string(it->size()),
                                   "items");
  }
  json items = *it;
  OUTPOST_RETURN_IF_ERROR(ResolveItemReferences(&items, "items", lookup));
  auto checked = ListedInputItems(items, "items", random);
  if (!checked.ok()) return checked.status();
  *listed = std::move(checked).value();
  std::vector<ConversationItem> out;
  for (const json& item : *listed) out.push_back({item["id"].get<std::string>(), DumpLossy(item)});
  return out;
}

void SendJson(HttpResponse& res, const json& j) {
  res.set_content(DumpLossy(j), "application/json");
}

}  // namespace

bool IsConversationsPath(const std::string& path) {
  return path == kRoot || path.rfind(std::string(kRoot) + "/", 0) == 0;
}

void ServeConversations(ConversationStore* store, ResponseStore* responses, const HttpRequest& req,
                        HttpResponse& res, const std::string& owner, const util::Clock& clock,
                        util::Random& random) {
  // /v1/conversations[/{id}[/items[/{item_id}]]]
  std::vector<std::string> parts;
  for (size_t at = kRoot.size(); at < req.path.size();) {
    const size_t next = req.path.find('/', at + 1);
    parts.push_back(
        req.path.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1));
    at = next == std::string::npos ? req.path.size() : next;
  }
  const bool known = parts.size() <= 3 && (parts.size() < 2 || parts[1] == "items");
  bool empty_part = false;
  for (const std::string& p : parts) empty_part = empty_part || p.empty();
  if (!known || empty_part) {
    return SendError(res, Status::NotFound("no route for " + req.method + " " + req.path));
  }
  const std::string& m = req.method;
  const bool get = m == "GET" || m == "HEAD";
  // Methods first: a wrong one is a 405 whether or not the id exists.
  if (parts.empty() && m != "POST") {
    return SendNotAllowed(res, req, "POST",
                          "(conversations are not listed; GET /v1/conversations/{id} retrieves "
                          "one)");
  }
  if (parts.size() == 1 && !get && m != "POST" && m != "DELETE") {
    return SendNotAllowed(res, req, "GET, POST, DELETE");
  }
  if (parts.size() == 2 && !get && m != "POST") return SendNotAllowed(res, req, "GET, POST");
  if (parts.size() == 3 && !get && m != "DELETE") return SendNotAllowed(res, req, "GET, DELETE");
  if (store == nullptr) {
    return SendError(res, Status::NotFound("this server keeps no conversations "
                                           "(responses_retention: 0); send the whole "
                                           "conversation in a Responses request's 'input'"));
  }
  const int64_t now = clock.UnixSeconds();
  // An item_reference in new items: an item of this conversation (`in`;
  // none at create), else one of the owner's stored responses.
  auto lookup_in = [&](const std::string& in) -> ItemLookup {
    return [&, in](const std::string& item_id, const std::string& param) -> StatusOr<std::string> {
      if (!in.empty()) {
        auto item = store->Item(owner, in, item_id, now);
        if (item.ok()) return std::move(item->item);
      }
      if (responses != nullptr) return responses->Item(owner, item_id, now, param);
      return Status::NotFound("no item with id '" + item_id + "' in the conversation '" + in + "'",
                              param);
    };
  };

  if (parts.empty()) {  // create
    auto body = BodyObject(req.body);
    if (!body.ok()) return SendError(res, body.status());
    const json metadata = body->value("metadata", json(nullptr));
    if (Status st = CheckMetadata(metadata); !st.ok()) return SendError(res, st);
    json listed;
    auto items = NewItems(*body, /*required=*/false, random, lookup_in(""), &listed);
    if (!items.ok()) return SendError(res, items.status());
    StoredConversation c;
    c.id = NewId("conv_", random);
    c.owner = owner;
    c.created_at = now;
    c.metadata = metadata.is_null() ? "{}" : metadata.dump();
    if (Status st = store->Create(c, *items, now); !st.ok()) return SendError(res, st);
    return SendJson(res, ConversationJson(c));
  }

  const std::string& id = parts[0];
  if (parts.size() == 1) {
    if (m == "DELETE") {
      if (Status st = store->Delete(owner, id, now); !st.ok()) return SendError(res, st);
      return SendJson(res, {{"id", id}, {"object", "conversation.deleted"}, {"deleted", true}});
    }
    if (m == "POST") {  // update: metadata is required and replaces the old
      auto body = BodyObject(req.body);
      if (!body.ok()) return SendError(res, body.status());
      auto metadata = body->find("metadata");
      if (metadata == body->end() || metadata->is_null()) {
        return SendError(res, Status::InvalidArgument("'metadata' is required", "metadata"));
      }
      if (Status st = CheckMetadata(*metadata); !st.ok()) return SendError(res, st);
      if (Status st = store->SetMetadata(owner, id, metadata->dump(), now); !st.ok()) {
        return SendError(res, st);
      }
    }
    auto c = store->Get(owner, id, now);
    if (!c.ok()) return SendError(res, c.status());
    return SendJson(res, ConversationJson(*c));
  }

  if (parts.size() == 3) {
    const std::string& item_id = parts[2];
    if (m == "DELETE") {  // answers with the conversation, as OpenAI does
      auto hold = store->Hold(owner, id, now, "conversation_id");
      if (!hold.ok()) return SendError(res, hold.status());
      if (Status st = store->DeleteItem(owner, id, item_id, now); !st.ok()) {
        return SendError(res, st);
      }
      auto c = store->Get(owner, id, now);
      if (!c.ok()) return SendError(res, c.status());
      return SendJson(res, ConversationJson(*c));
    }
    auto item = store->Item(owner, id, item_id, now);
    if (!item.ok()) return SendError(res, item.status());
    return res.set_content(item->item, "application/json");
  }

  // .../items
  if (m == "POST") {
    auto body = BodyObject(req.body);
    if (!body.ok()) return SendError(res, body.status());
    // Held first: the references below read the conversation as it stays.
    auto hold = store->Hold(owner, id, now, "conversation_id");
    if (!hold.ok()) return SendError(res, hold.status());
    json listed;
    auto items = NewItems(*body, /*required=*/true, random, lookup_in(id), &listed);
    if (!items.ok()) return SendError(res, items.status());
    if (Status st = store->Append(owner, id, *items, now); !st.ok()) return SendError(res, st);
    return SendJson(res, ListJson(std::move(listed), false));
  }
  auto items = store->Items(owner, id, now);
  if (!items.ok()) return SendError(res, items.status());
  json all = json::array();
  for (const ConversationItem& item : *items) {
    json j = json::parse(item.item, nullptr, false);
    if (j.is_object()) all.push_back(std::move(j));
  }
  // `include` asks for parts of item types Outpost never makes (images,
  // hosted tool results, encrypted reasoning): there is nothing to add.
  auto page = ItemPage(std::move(all), req.query, id);
  if (!page.ok()) return SendError(res, page.status());
  SendJson(res, *page);
}

}  // namespace outpost::api

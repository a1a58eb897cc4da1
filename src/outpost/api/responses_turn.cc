// The shared parts of a Responses turn (responses_turn.h): the Keeper,
// the body read against the stores, truncation.
#include "outpost/api/responses_turn.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <vector>

#include "outpost/api/json_fields.h"
#include "outpost/router/local_target.h"
#include "outpost/util/status_macros.h"

namespace outpost::api {

using nlohmann::json;

namespace {

// Calls f(id, item JSON) for the request's input items (`input_items`,
// all listed with ids), then for `output`'s items that have one.
template <typename F>
void ForEachItemWithId(const std::string& input_items, const json& output, F&& f) {
  const json input = json::parse(input_items, nullptr, false);
  for (const json* items : std::initializer_list<const json*>{&input, &output}) {
    if (!items->is_array()) continue;
    for (const json& item : *items) {
      if (item.is_object() && item.value("id", json()).is_string()) {
        f(item["id"].get<std::string>(), DumpLossy(item));
      }
    }
  }
}

}  // namespace

void Keeper::operator()(const std::string& response) const {
  if (!active()) return;
  struct Done {
    const Keeper* k;
    ~Done() { k->Release(); }
  } done{this};
  json r = json::parse(response, nullptr, false);
  const json status = r.is_object() ? r.value("status", json()) : json();
  if (!r.is_object() || !r["id"].is_string() || (status != "completed" && status != "incomplete")) {
    return;  // not a whole answer: nothing to continue
  }
  json output = r["output"].is_array() ? r["output"] : json::array();
  for (json& item : output) {
    // One an upstream wrote without an id gets one, the same everywhere.
    if (item.is_object() && !item.value("id", json()).is_string()) item["id"] = NewId("item_");
  }
  if (conversations != nullptr) AddToConversation(output);
  if (store == nullptr) return;
  json items = json::parse(context, nullptr, false);
  if (!items.is_array()) return;
  for (const json& item : output) items.push_back(item);
  StoredResponse rec;
  ForEachItemWithId(input_items, output, [&](const std::string& id, std::string item) {
    rec.items.emplace_back(id, std::move(item));
  });
  rec.id = r["id"].get<std::string>();
  rec.owner = owner;
  const int64_t now = clock->UnixSeconds();
  const json created = r.value("created_at", json());
  rec.created_at = created.is_number_integer() ? created.get<int64_t>() : now;
  rec.expires_at = now + retention_s;
  rec.response = response;
  rec.input_items = input_items;
  rec.context = DumpLossy(items);
  if (Status st = store->Put(rec, now); !st.ok()) {
    spdlog::warn("responses: {} not stored: {}", rec.id, st.message());
  }
}

void Keeper::AddToConversation(const json& output) const {
  std::vector<ConversationItem> added;
  ForEachItemWithId(input_items, output, [&](const std::string& id, std::string item) {
    added.push_back({id, std::move(item)});
  });
  if (Status st = conversations->Append(owner, conversation_id, added, clock->UnixSeconds());
      !st.ok()) {
    spdlog::warn("responses: the answer was not added to {}: {}", conversation_id, st.message());
  }
}

// A stored Response's status ("" if it has none).
std::string StatusOf(const std::string& response) {
  const json r = json::parse(response, nullptr, false);
  const json status = r.is_object() ? r.value("status", json()) : json();
  return status.is_string() ? status.get<std::string>() : "";
}

bool Unfinished(const std::string& status) {
  return status == "queued" || status == "in_progress";
}

StatusOr<ResponsesRequest> ParseResponseBody(const std::string& body, ResponseStore* store,
                                             ConversationStore* conversations,
                                             const std::string& owner, const util::Clock* clock,
                                             util::Random* random,
                                             std::shared_ptr<ConversationHold>* hold) {
  ResponsesParseOptions po;
  po.random = random;
  if (store != nullptr) {
    po.previous = [&](const std::string& id) -> StatusOr<std::string> {
      auto r = store->Get(owner, id, clock->UnixSeconds(), "previous_response_id");
      if (!r.ok()) return r.status();
      // A background response has no answer to continue until it ends with one.
      const std::string status = StatusOf(r->response);
      if (status != "completed" && status != "incomplete") {
        return Status::InvalidArgument("previous_response_id: the response '" + id + "' is " +
                                           status +
                                           "; only a completed or incomplete response can be "
                                           "continued (poll GET /v1/responses/" +
                                           id + ")",
                                       "previous_response_id");
      }
      return std::move(r->context);
    };
    po.item = [&](const std::string& id, const std::string& param) {
      return store->Item(owner, id, clock->UnixSeconds(), param);
    };
  }
  if (conversations != nullptr) {
    po.conversation = [&](const std::string& id) -> StatusOr<std::string> {
      if (hold != nullptr) {
        auto held = conversations->Hold(owner, id, clock->UnixSeconds(), "conversation");
        if (!held.ok()) return held.status();
        *hold = std::move(held).value();
      }
      auto items = conversations->Items(owner, id, clock->UnixSeconds(), "conversation");
      if (!items.ok()) return items.status();
      std::string out = "[";
      for (const ConversationItem& item : *items) {
        if (out.size() > 1) out += ",";
        out += item.item;
      }
      return out + "]";
    };
  }
  return ParseResponsesRequest(body, po);
}

Status TruncateToFit(const models::ServedModel& model, router::CompletionCall* call) {
  const int32_t ctx = model.scheduler->options().ctx_per_session;
  std::vector<engine::ChatMessage>& m = call->request.messages;
  size_t first = 0;
  while (first < m.size() && m[first].role == "system") ++first;
  for (int dropped = 0;; ++dropped) {
    scheduler::GenerationRequest gen;
    OUTPOST_RETURN_IF_ERROR(router::LocalTarget::Prepare(model, *call, &gen));
    const int64_t need =
        static_cast<int64_t>(gen.prompt.size()) + std::max<int64_t>(1, call->request.max_tokens);
    if (need <= ctx || m.size() - first <= 1) {
      if (dropped > 0) spdlog::debug("responses: truncation dropped {} message(s)", dropped);
      return Status::Ok();
    }
    m.erase(m.begin() + static_cast<std::ptrdiff_t>(first));
    while (m.size() - first > 1 && m[first].role != "user") {
      m.erase(m.begin() + static_cast<std::ptrdiff_t>(first));
      ++dropped;
    }
  }
}

}  // namespace outpost::api

// HttpServer::HandleResponses — POST /v1/responses, OpenAI's Responses API:
// the body becomes the chat call it means (responses_request.h; a
// previous_response_id's stored items in front), dispatched like any
// completion (call_dispatch.cc: headers, audit, routing; an upstream gets
// the body as it came, or with the stored items in place of the id, at its
// /v1/responses), and a local answer is written as a Response object or its
// event stream (responses_response.h). With `store` (the default) and a
// response store, the answer — local or relayed — is kept before its last
// byte is sent, so the next turn can continue it at once; with a
// `conversation`, this input and the answer's output are added to it then.
//
// HttpServer::HandleStoredResponse — the stored ones: GET and DELETE
// /v1/responses/{id}, GET /v1/responses/{id}/input_items.
//
// HttpServer::HandleInputTokens — POST /v1/responses/input_tokens: how many
// tokens the body's prompt is, with a served model's template and tokenizer.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <climits>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "outpost/api/conversation_store.h"
#include "outpost/api/errors.h"
#include "outpost/api/http_server.h"
#include "outpost/api/http_sink.h"
#include "outpost/api/json_fields.h"
#include "outpost/api/response_store.h"
#include "outpost/api/responses_request.h"
#include "outpost/api/responses_response.h"
#include "outpost/api/tool_answer.h"
#include "outpost/router/local_target.h"
#include "outpost/util/status_macros.h"

namespace outpost::api {
namespace {

using nlohmann::json;
using scheduler::FinishReason;

// Keeps an answered Response: stored, its output items joining the
// conversation so far; and in its conversation, after this input.
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

  void operator()(const std::string& response) const {
    if (!active()) return;
    struct Done {
      const Keeper* k;
      ~Done() { k->Release(); }
    } done{this};
    json r = json::parse(response, nullptr, false);
    const json status = r.is_object() ? r.value("status", json()) : json();
    if (!r.is_object() || !r["id"].is_string() ||
        (status != "completed" && status != "incomplete")) {
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
    ForEachItemWithId(output, [&](const std::string& id, std::string item) {
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

  // Calls f(id, item JSON) for this request's input items (all listed with
  // ids), then for `output`'s items that have one.
  template <typename F>
  void ForEachItemWithId(const json& output, F&& f) const {
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

  void AddToConversation(const json& output) const {
    std::vector<ConversationItem> added;
    ForEachItemWithId(output, [&](const std::string& id, std::string item) {
      added.push_back({id, std::move(item)});
    });
    if (Status st = conversations->Append(owner, conversation_id, added, clock->UnixSeconds());
        !st.ok()) {
      spdlog::warn("responses: the answer was not added to {}: {}", conversation_id, st.message());
    }
  }
};

struct ResponseStream {
  std::shared_ptr<HttpSink> sink;
  std::unique_ptr<ResponseEvents> events;
  std::unique_ptr<ToolCallStream> tools;  // when the request has tools
  bool started = false;
  bool finished = false;
};

// A body read with the owner's stored responses behind previous_response_id
// and conversations behind conversation. With `hold`, the conversation is
// held (*hold) before its items are read: a turn answers from a conversation
// no other turn changes meanwhile.
StatusOr<ResponsesRequest> Parse(const std::string& body, ResponseStore* store,
                                 ConversationStore* conversations, const std::string& owner,
                                 const util::Clock* clock, util::Random* random,
                                 std::shared_ptr<ConversationHold>* hold) {
  ResponsesParseOptions po;
  po.random = random;
  if (store != nullptr) {
    po.previous = [&](const std::string& id) -> StatusOr<std::string> {
      auto r = store->Get(owner, id, clock->UnixSeconds(), "previous_response_id");
      if (!r.ok()) return r.status();
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

// truncation: "auto" — OpenAI drops items from the start of the
// conversation until the input fits the model's context. For a model served
// here: the oldest turns after the leading system messages (instructions)
// go, until the prompt and max_output_tokens (at least one token) fit one
// session; the conversation then starts at a user message (templates that
// insist on alternating turns), and the last message always stays (if it
// alone does not fit, the usual 400 follows). Errors: Prepare's.
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

}  // namespace

void HttpServer::HandleResponses(const HttpRequest& req, HttpResponse& res) {
  const std::string path = router::EndpointPath(router::Endpoint::kResponses);
  auto fail = [&](const Status& st) { SendError(res, st); };
  if (!serving_->ready()) {
    return fail(Status::Unavailable("the model is still loading").WithRetryAfter(1));
  }
  Keeper keep;
  keep.owner = OwnerOf(req);
  keep.clock = clock_;
  keep.retention_s = responses_retention_s_;
  auto parsed =
      Parse(req.body, responses_, conversations_, keep.owner, clock_, random_, &keep.hold);
  if (!parsed.ok()) return fail(parsed.status());
  if (parsed->store) keep.store = responses_;
  if (!parsed->conversation_id.empty()) {
    keep.conversations = conversations_;
    keep.conversation_id = std::move(parsed->conversation_id);
  }
  if (keep.active()) {
    keep.input_items = std::move(parsed->input_items);
    keep.context = std::move(parsed->context);
  }
  router::CompletionCall call;
  call.request = std::move(parsed->chat);
  if (Status st = ReadCallHeaders(req, &call); !st.ok()) return fail(st);
  if (parsed->truncate) {
    // Only a model served here: an upstream gets `truncation` as it came.
    if (const auto model = serving_->Find(call.request.model)) {
      if (Status st = TruncateToFit(*model, &call); !st.ok()) return fail(ForResponses(st));
    }
  }
  // An upstream never stored the earlier turns: it gets them in the input.
  if (!parsed->expanded_body.empty()) call.body = std::move(parsed->expanded_body);
  call.id = NewId("resp_", *random_);
  ResponseInfo info;
  info.id = call.id;
  info.created_at = clock_->UnixSeconds();
  info.service_tier = scheduler::ServiceTierName(call.priority);
  info.echo = std::move(parsed->echo);
  const bool stream = call.request.stream;
  const bool tools = call.request.tools.active();
  const bool logprobs = call.request.top_logprobs >= 0;

  // A relayed answer states what this server did with the request, not
  // what the upstream (which never saw the id or the conversation) did.
  RelayedResponse relayed;
  if (keep.active()) relayed.keep = keep;
  {
    const json echo = json::parse(info.echo, nullptr, false);
    json fields = json::object();
    for (const char* key : {"store", "previous_response_id", "conversation"}) {
      if (echo.is_object() && echo.contains(key)) fields[key] = echo[key];
    }
    relayed.fields = fields.dump();
  }
  const std::shared_ptr<HttpSink> sink =
      DispatchCall(std::move(call), req, res, ForResponses, &relayed);
  if (sink == nullptr) return;  // an error, or a relayed answer: written
  info.model = sink->meta().model;
  const auto& parser = sink->meta().tool_parser;

  if (!stream) {
    Choice answer;
    answer.has_logprobs = logprobs;
    for (bool ended = false; !ended;) {
      for (auto& p : sink->TakePieces(&ended)) {
        if (p.choice != 0) continue;
        answer.text += p.text;
        for (auto& t : p.logprobs) answer.logprobs.push_back(std::move(t));
      }
    }
    sink->Cancel();
    const scheduler::GenerationResult& r = sink->result();
    if (r.finish == FinishReason::kError) return fail(ForResponses(r.error));
    answer.finish = r.finish;
    if (tools && parser) ApplyToolAnswer(&answer, *parser, *random_);
    info.completed_at = clock_->UnixSeconds();
    std::string body = ResponseBody(info, answer, r.usage, *random_);
    keep(body);
    res.set_content(std::move(body), "application/json");
    return;
  }

  auto st = std::make_shared<ResponseStream>();
  st->sink = sink;
  st->events = std::make_unique<ResponseEvents>(std::move(info), random_);
  if (tools && parser) st->tools = std::make_unique<ToolCallStream>(parser, random_);
  const ApiStats stats = stats_;
  const util::Clock* clock = clock_;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_stream(
      "text/event-stream",
      [st, stats, path, clock, keep](ChunkWriter& out) {
        if (st->finished) return false;
        std::string events;
        if (!st->started) {
          events = st->events->Start();
          st->started = true;
        }
        bool ended = false;
        for (auto& p : st->sink->TakePieces(&ended)) {
          if (p.choice != 0) continue;
          Choice delta;
          if (st->tools) {
            delta = st->tools->Feed(p.text);
          } else {
            delta.text = std::move(p.text);
            delta.logprobs = std::move(p.logprobs);
          }
          events += st->events->Delta(delta);
        }
        if (!ended) return events.empty() || out.Write(events);
        st->finished = true;
        const scheduler::GenerationResult& r = st->sink->result();
        if (r.finish == FinishReason::kError) {
          // Headers are gone: the failure is the stream's last event.
          events += st->events->Fail(r.error);
          keep.Release();
          stats.requests.With({path, std::to_string(HttpStatusFor(r.error.code()))}).Add();
          out.Write(events);
          return false;
        }
        if (st->tools) events += st->events->Delta(st->tools->Finish());
        events += st->events->Finish(r.finish, r.usage, clock->UnixSeconds());
        keep(st->events->final_response());
        stats.requests.With({path, "200"}).Add();
        out.Write(events);
        return false;
      },
      [st](bool) { st->sink->Cancel(); });
}

void HttpServer::HandleStoredResponse(const HttpRequest& req, HttpResponse& res) {
  // /v1/responses/{id}[/input_items | /cancel]
  const std::string rest = req.path.substr(std::string_view("/v1/responses/").size());
  const size_t slash = rest.find('/');
  const std::string id = rest.substr(0, slash);
  const std::string sub = slash == std::string::npos ? "" : rest.substr(slash + 1);
  const bool get = req.method == "GET" || req.method == "HEAD";
  if (id == "input_tokens" && sub.empty()) {
    if (req.method != "POST") return SendNotAllowed(res, req, "POST");
    return HandleInputTokens(req, res);
  }
  if (id.empty() || (!sub.empty() && sub != "input_items" && sub != "cancel")) {
    return SendError(res, Status::NotFound("no route for " + req.method + " " + req.path));
  }
  if (sub.empty() && !get && req.method != "DELETE") return SendNotAllowed(res, req, "GET, DELETE");
  if (sub == "input_items" && !get) return SendNotAllowed(res, req, "GET");
  if (sub == "cancel" && req.method != "POST") return SendNotAllowed(res, req, "POST");
  if (responses_ == nullptr) {
    return SendError(res, Status::NotFound("no stored response with id '" + id +
                                               "': this server stores no responses "
                                               "(responses_retention: 0)",
                                           "response_id"));
  }
  const std::string owner = OwnerOf(req);
  const int64_t now = clock_->UnixSeconds();
  if (req.method == "DELETE") {
    if (Status st = responses_->Delete(owner, id, now); !st.ok()) return SendError(res, st);
    return res.set_content(json{{"id", id}, {"object", "response"}, {"deleted", true}}.dump(),
                           "application/json");
  }
  auto stored = responses_->Get(owner, id, now);
  if (!stored.ok()) return SendError(res, stored.status());
  if (sub == "cancel") {
    return SendError(res, Status::InvalidArgument("only a background response can be cancelled, "
                                                  "and Outpost runs none; '" +
                                                  id + "' has finished"));
  }
  if (sub.empty()) {
    if (QueryParam(req.query, "stream").value_or("false") != "false") {
      return SendError(
          res, Status::InvalidArgument("stream: a stored response is retrieved whole (only a "
                                       "background response streams again, and Outpost runs none)",
                                       "stream"));
    }
    return res.set_content(stored->response, "application/json");
  }
  // input_items: newest first unless order=asc; `after` an item id.
  auto page = ItemPage(json::parse(stored->input_items, nullptr, false), req.query, id);
  if (!page.ok()) return SendError(res, page.status());
  res.set_content(DumpLossy(*page), "application/json");
}

void HttpServer::HandleInputTokens(const HttpRequest& req, HttpResponse& res) {
  if (!serving_->ready()) {
    return SendError(res, Status::Unavailable("the model is still loading").WithRetryAfter(1));
  }
  auto parsed = Parse(req.body, responses_, conversations_, OwnerOf(req), clock_, random_, nullptr);
  if (!parsed.ok()) return SendError(res, parsed.status());
  router::CompletionCall call;
  call.request = std::move(parsed->chat);
  const auto model = serving_->Find(call.request.model);
  if (model == nullptr) {
    return SendError(res, Status::NotFound("the model '" + call.request.model +
                                               "' is not served here; input tokens are counted "
                                               "with a served model's tokenizer (GET /v1/models)",
                                           "model"));
  }
  // The prompt exactly as a generation would build it: truncated, template,
  // tools, tokens.
  if (parsed->truncate) {
    if (Status st = TruncateToFit(*model, &call); !st.ok()) return SendError(res, ForResponses(st));
  }
  scheduler::GenerationRequest gen;
  if (Status st = router::LocalTarget::Prepare(*model, call, &gen); !st.ok()) {
    return SendError(res, ForResponses(st));
  }
  res.set_content(json{{"object", "response.input_tokens"},
                       {"input_tokens", static_cast<int64_t>(gen.prompt.size())}}
                      .dump(),
                  "application/json");
}

}  // namespace outpost::api

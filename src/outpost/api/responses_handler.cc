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
// With `background`, the same turn runs on a thread of its own
// (background_runs.h): the client gets the queued Response (or the run's
// events) at once, and the stored record moves queued → in_progress → the
// answer, or failed / cancelled.
//
// HttpServer::HandleStoredResponse — the stored ones: GET and DELETE
// /v1/responses/{id} (GET ?stream=true&starting_after=N replays a
// background run's events), GET /v1/responses/{id}/input_items, POST
// /v1/responses/{id}/cancel.
//
// HttpServer::HandleInputTokens — POST /v1/responses/input_tokens: how many
// tokens the body's prompt is, with a served model's template and tokenizer.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
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
#include "outpost/api/sse.h"
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

// A stored Response's status ("" if it has none).
std::string StatusOf(const std::string& response) {
  const json r = json::parse(response, nullptr, false);
  const json status = r.is_object() ? r.value("status", json()) : json();
  return status.is_string() ? status.get<std::string>() : "";
}

bool Unfinished(const std::string& status) {
  return status == "queued" || status == "in_progress";
}

// A background run's writer: its stream goes into the run; the first bytes
// mark the stored response in_progress (`started`).
class RunWriter final : public ChunkWriter {
 public:
  RunWriter(BackgroundRun* run, std::function<void()> started)
      : run_(run), started_(std::move(started)) {}
  bool Write(const std::string& data) override {
    if (started_) {
      started_();
      started_ = nullptr;
    }
    run_->Write(data);
    return !run_->cancelled();
  }

 private:
  BackgroundRun* run_;
  std::function<void()> started_;
};

// The error a failed run ends with: the `response.failed` event's, an
// `error` event's, or an error body's; {code, message}.
json RunError(const std::vector<std::string>& events, const std::string& error_body) {
  auto from = [](const json& e) -> json {
    if (!e.is_object()) return nullptr;
    const json code = e.value("code", json());
    const json message = e.value("message", json());
    return {{"code", code.is_string() ? code : json("server_error")},
            {"message", message.is_string() ? message : json("the response failed")}};
  };
  if (!error_body.empty()) {
    const json b = json::parse(error_body, nullptr, false);
    if (b.is_object() && b.contains("error")) return from(b["error"]);
  }
  for (auto it = events.rbegin(); it != events.rend(); ++it) {
    const size_t data = it->find("data:");
    if (data == std::string::npos) continue;
    const json e = json::parse(it->substr(data + 5), nullptr, false);
    if (!e.is_object()) continue;
    if (e.value("type", json()) == "response.failed" && e.contains("response")) {
      return from(e["response"].value("error", json()));
    }
    if (e.value("type", json()) == "error") return from(e);
  }
  return {{"code", "server_error"}, {"message", "the response ended without an answer"}};
}

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

// One Responses turn, read and ready to run (its conversation held).
struct HttpServer::ResponseTurn {
  Keeper keep;
  router::CompletionCall call;
  ResponseInfo info;
  bool background = false;
  bool counted = true;  // a stream's end counts the request (a background run's does not)
};

void HttpServer::HandleResponses(const HttpRequest& req, HttpResponse& res) {
  std::unique_ptr<ResponseTurn> turn = PrepareResponse(req, res);
  if (turn == nullptr) return;  // the error is written
  if (turn->background) return StartBackground(std::move(turn), req, res);
  RunResponse(std::move(*turn), req, res);
}

std::unique_ptr<HttpServer::ResponseTurn> HttpServer::PrepareResponse(const HttpRequest& req,
                                                                      HttpResponse& res) {
  auto fail = [&](const Status& st) {
    SendError(res, st);
    return nullptr;
  };
  if (!serving_->ready()) {
    return fail(Status::Unavailable("the model is still loading").WithRetryAfter(1));
  }
  auto turn = std::make_unique<ResponseTurn>();
  Keeper& keep = turn->keep;
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
  router::CompletionCall& call = turn->call;
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
  ResponseInfo& info = turn->info;
  info.id = call.id;
  info.created_at = clock_->UnixSeconds();
  info.service_tier = scheduler::ServiceTierName(call.priority);
  // Until an answer says which served it: the model asked for (a served
  // one by its id: "" is the default model).
  info.model = call.request.model;
  if (const auto model = serving_->Find(call.request.model)) info.model = model->id;
  info.echo = std::move(parsed->echo);
  turn->background = parsed->background;
  return turn;
}

void HttpServer::RunResponse(ResponseTurn turn, const HttpRequest& req, HttpResponse& res) {
  const std::string path = router::EndpointPath(router::Endpoint::kResponses);
  auto fail = [&](const Status& st) { SendError(res, st); };
  const Keeper& keep = turn.keep;
  ResponseInfo& info = turn.info;
  const bool stream = turn.call.request.stream;
  const bool tools = turn.call.request.tools.active();
  const bool logprobs = turn.call.request.top_logprobs >= 0;

  // A relayed answer states what this server did with the request, not
  // what the upstream (which never saw the id or the conversation) did.
  RelayedResponse relayed;
  relayed.counted = turn.counted;
  if (keep.active()) relayed.keep = keep;
  {
    const json echo = json::parse(info.echo, nullptr, false);
    json fields = json::object();
    for (const char* key : {"store", "previous_response_id", "conversation", "background"}) {
      if (echo.is_object() && echo.contains(key)) fields[key] = echo[key];
    }
    // A background response was named here before the upstream saw it.
    if (turn.background) fields["id"] = info.id;
    relayed.fields = fields.dump();
  }
  const std::shared_ptr<HttpSink> sink =
      DispatchCall(std::move(turn.call), req, res, ForResponses, &relayed);
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
    // The client has gone: nothing was answered, nothing is kept.
    if (r.finish == FinishReason::kCancelled) return fail(Status::Cancelled("the client has gone"));
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
  const bool counted = turn.counted;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_stream(
      "text/event-stream",
      [st, stats, path, clock, keep, counted](ChunkWriter& out) {
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
          if (counted) {
            stats.requests.With({path, std::to_string(HttpStatusFor(r.error.code()))}).Add();
          }
          out.Write(events);
          return false;
        }
        if (r.finish == FinishReason::kCancelled) {
          keep.Release();  // the client has gone: nothing is kept
          return false;
        }
        if (st->tools) events += st->events->Delta(st->tools->Finish());
        events += st->events->Finish(r.finish, r.usage, clock->UnixSeconds());
        keep(st->events->final_response());
        if (counted) stats.requests.With({path, "200"}).Add();
        out.Write(events);
        return false;
      },
      [st](bool) { st->sink->Cancel(); });
}

void HttpServer::StartBackground(std::unique_ptr<ResponseTurn> turn, const HttpRequest& req,
                                 HttpResponse& res) {
  // The run streams, whatever the client asked: its events are what a
  // client that resumes reads. An upstream gets the same (and never
  // `background`: this server runs it).
  // What would fail the run at once fails the create instead, as OpenAI
  // answers it: a prompt a model served here cannot hold.
  if (const auto model = serving_->Find(turn->call.request.model)) {
    scheduler::GenerationRequest gen;
    Status st = router::LocalTarget::Prepare(*model, turn->call, &gen);
    if (st.ok()) st = model->scheduler->CheckFits(gen);
    if (!st.ok()) return SendError(res, ForResponses(st));
  }
  const bool stream = turn->call.request.stream;
  turn->call.request.stream = true;
  turn->counted = false;  // this create is the request counted
  {
    json body = json::parse(turn->call.body, nullptr, false);
    if (body.is_object()) {
      body.erase("background");
      body["stream"] = true;
      turn->call.body = DumpLossy(body);
    }
  }
  const int64_t now = clock_->UnixSeconds();
  StoredResponse rec;
  rec.id = turn->info.id;
  rec.owner = turn->keep.owner;
  rec.created_at = turn->info.created_at;
  rec.expires_at = now + responses_retention_s_;
  rec.response = PendingResponseBody(turn->info, "queued");
  rec.input_items = turn->keep.input_items;
  rec.context = "[]";  // nothing to continue until it has an answer
  if (Status st = responses_->Put(rec, now); !st.ok()) return SendError(res, st);
  std::shared_ptr<ResponseTurn> shared(std::move(turn));
  auto run = background_->Start(rec.id, rec.owner,
                                [this, shared, req](const std::shared_ptr<BackgroundRun>& r) {
                                  RunBackground(std::move(*shared), req, r);
                                });
  if (!run.ok()) {
    (void)responses_->Delete(rec.owner, rec.id, now);
    return SendError(res, run.status());
  }
  if (stream)
    return StreamBackground(*run, -1, router::EndpointPath(router::Endpoint::kResponses), res);
  res.set_content(rec.response, "application/json");
}

void HttpServer::RunBackground(ResponseTurn turn, HttpRequest req,
                               std::shared_ptr<BackgroundRun> run) {
  const std::string id = turn.info.id, owner = turn.keep.owner;
  req.client_gone = [run] { return run->cancelled(); };
  ResponseStore* store = responses_;
  const util::Clock* clock = clock_;
  // Sets the stored response's status (and error) while it has no answer.
  auto set_status = [&](const char* status, const json& error) {
    const int64_t now = clock->UnixSeconds();
    auto rec = store->Get(owner, id, now);
    if (!rec.ok() || !Unfinished(StatusOf(rec->response))) return;  // deleted, or answered
    json r = json::parse(rec->response, nullptr, false);
    if (!r.is_object()) return;
    r["status"] = status;
    if (!error.is_null()) r["error"] = error;
    rec->response = DumpLossy(r);
    if (Status st = store->Put(*rec, now); !st.ok()) {
      spdlog::warn("responses: background {} not updated: {}", id, st.message());
    }
  };
  HttpResponse res;
  RunResponse(std::move(turn), req, res);
  std::string error_body;
  if (res.streamed() && res.status == 200) {
    RunWriter writer(run.get(), [&] { set_status("in_progress", nullptr); });
    while (res.provider(writer)) {
    }
    if (res.on_end) res.on_end(!run->cancelled());
  } else {
    error_body = res.body;
  }
  // Answered (completed or incomplete): the Keeper has stored it. Else it
  // ends failed, or cancelled when its client asked.
  if (run->cancelled() && !run->shut_down()) {
    set_status("cancelled", nullptr);
    return;
  }
  bool ended = false;
  json error = run->shut_down()
                   ? json{{"code", "server_error"},
                          {"message", "the server stopped before the answer was whole"}}
                   : RunError(run->EventsAfter(-1, 0, &ended), error_body);
  set_status("failed", error);
  if (!error_body.empty()) {
    // Nothing was streamed: a reader still gets the end.
    auto rec = store->Get(owner, id, clock->UnixSeconds());
    if (rec.ok()) {
      json e = {{"type", "response.failed"},
                {"sequence_number", run->events()},
                {"response", json::parse(rec->response, nullptr, false)}};
      run->Write(SseEvent("response.failed", DumpLossy(e)));
    }
  }
}

void HttpServer::StreamBackground(std::shared_ptr<BackgroundRun> run, int64_t after,
                                  const std::string& route, HttpResponse& res) {
  const ApiStats stats = stats_;
  auto next = std::make_shared<int64_t>(after);
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_stream(
      "text/event-stream",
      [run, next, stats, route](ChunkWriter& out) {
        bool ended = false;
        std::string data;
        for (std::string& e : run->EventsAfter(*next, 1000, &ended)) {
          data += e;
          ++*next;
        }
        if (!data.empty() && !out.Write(data)) return false;
        if (!ended) return true;
        stats.requests.With({route, "200"}).Add();
        return false;
      },
      nullptr);
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
  std::shared_ptr<BackgroundRun> run = background_->Find(owner, id);
  if (req.method == "DELETE") {
    // A background response still running stops first: it would store itself again.
    if (run != nullptr && !run->done()) {
      run->Cancel();
      run->WaitDone(30'000);
    }
    if (Status st = responses_->Delete(owner, id, now); !st.ok()) return SendError(res, st);
    return res.set_content(json{{"id", id}, {"object", "response"}, {"deleted", true}}.dump(),
                           "application/json");
  }
  if (sub == "cancel" && run != nullptr && !run->done()) {
    // Stops the run; it stores itself as cancelled (or, if its answer was
    // already whole, as answered) before it is done.
    run->Cancel();
    if (!run->WaitDone(30'000)) {
      return SendError(
          res, Status::Unavailable("'" + id + "' is still stopping; retry").WithRetryAfter(1));
    }
  }
  auto stored = responses_->Get(owner, id, now);
  if (!stored.ok()) return SendError(res, stored.status());
  const json response = json::parse(stored->response, nullptr, false);
  const bool background = response.is_object() && response.value("background", json()) == true;
  const std::string status = StatusOf(stored->response);
  if (sub == "cancel") {
    if (!background) {
      return SendError(res, Status::InvalidArgument("only a background response can be "
                                                    "cancelled; '" +
                                                    id + "' was answered at once"));
    }
    // Cancelling again answers the same; an answered one is not undone.
    if (status != "cancelled") {
      return SendError(res, Status::InvalidArgument("'" + id + "' has already ended (" + status +
                                                    "): there is nothing to cancel"));
    }
    return res.set_content(stored->response, "application/json");
  }
  if (sub.empty()) {
    if (QueryParam(req.query, "stream").value_or("false") != "false") {
      if (!background) {
        return SendError(
            res, Status::InvalidArgument("stream: '" + id +
                                             "' was answered at once and is retrieved whole (only "
                                             "a background response streams again)",
                                         "stream"));
      }
      if (run == nullptr) {
        return SendError(
            res, Status::InvalidArgument("stream: the events of '" + id +
                                             "' are kept 10 minutes after it ends (or until a "
                                             "restart); retrieve it whole",
                                         "stream"));
      }
      int64_t after = -1;
      if (auto a = QueryParam(req.query, "starting_after")) {
        char* end = nullptr;
        errno = 0;
        const long long v = std::strtoll(a->c_str(), &end, 10);
        if (a->empty() || *end != '\0' || errno != 0 || v < 0) {
          return SendError(
              res, Status::InvalidArgument("starting_after must be an event's sequence_number (an "
                                           "integer ≥ 0), got '" +
                                               *a + "'",
                                           "starting_after"));
        }
        after = v;
      }
      return StreamBackground(run, after, "/v1/responses/{id}", res);
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

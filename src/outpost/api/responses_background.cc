// HttpServer::StartBackground, RunBackground, StreamBackground,
// ResumeBackground — a Responses turn with `background: true` runs on a
// thread of its own (background_runs.h): the client gets the queued
// Response (or the run's events) at once, and the stored record moves
// queued → in_progress (the first token) → the answer, or failed /
// cancelled. The Keeper stores the answer and SetPendingStatus the other
// ends; both run on the run's worker thread, one after the other, so they
// never race. The record keeps the request until the run ends: a run a
// stop or a crash cut is queued again and ResumeBackground, at the next
// start, runs it from the beginning under the same id.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "outpost/api/errors.h"
#include "outpost/api/http_server.h"
#include "outpost/api/json_fields.h"
#include "outpost/api/kept_request.h"
#include "outpost/api/responses_turn.h"
#include "outpost/api/sse.h"
#include "outpost/router/local_target.h"
#include "outpost/router/upstream_client.h"

namespace outpost::api {
namespace {

using nlohmann::json;

// How long a background run waits for a free session (asking again each
// Retry-After) before it fails with the box's "over capacity" error.
constexpr int64_t kMaxQueuedMs = 10 * 60 * 1000;

// A background run's writer: the stream its turn makes, into the run. The
// run opened with its own response.created and response.queued (status
// queued: written when it started, before a model had it), so the
// stream's own ones are dropped, and each event is renumbered to its place
// in the run (a relayed stream counts from 0 too, or not at all —
// llama-server's): event i is sequence_number i, what `starting_after`
// counts. The first event kept (response.in_progress, or whatever an
// upstream sends first: the model has begun) marks the stored response
// in_progress (`started`) before a reader can see it.
class RunWriter final : public ChunkWriter {
 public:
  RunWriter(BackgroundRun* run, std::function<void()> started)
      : run_(run), started_(std::move(started)) {}
  bool Write(const std::string& data) override {
    for (std::string& e : splitter_.Feed(data)) Forward(std::move(e));
    return !run_->cancelled();
  }
  // The stream has ended: an event without its blank line still counts.
  void Flush() {
    if (std::string last = splitter_.Flush(); !last.empty()) Forward(std::move(last));
  }

 private:
  void Forward(std::string event) {
    const size_t data = event.find("data:");
    json e = data == std::string::npos
                 ? json()
                 : json::parse(event.substr(data + 5, event.find('\n', data) - data - 5), nullptr,
                               false);
    if (e.is_object()) {
      const json type = e.value("type", json());
      if (type == "response.created" || type == "response.queued") return;
      if (type.is_string()) {  // numbered even where the upstream did not number it
        e["sequence_number"] = run_->events();
        event = SseEvent(type.get<std::string>(), DumpLossy(e));
      }
    }
    if (started_) {
      started_();
      started_ = nullptr;
    }
    run_->Write(event);
  }

  BackgroundRun* run_;
  std::function<void()> started_;
  SseEventSplitter splitter_;
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

// StoredResponse::request for a run: {"body", "headers"} — the headers a
// run needs to be asked again as it was (identity, routing, class,
// session), the key as its id (kept_request.h), as the Batch API keeps its
// batches' own.
std::string RunRequest(const HttpRequest& req) {
  json headers =
      KeepHeaders(req, {"Authorization", "X-Outpost-Priority", "X-Data-Class", "X-Outpost-Tier",
                        "X-Latency-Budget-Ms", "X-Session-Id", router::kForwardedHeader});
  return DumpLossy(json{{"body", req.body}, {"headers", std::move(headers)}});
}

// The request RunRequest() kept, its key looked up by `key_with_id`; a
// damaged one is an empty POST (a 400).
HttpRequest FromRunRequest(const std::string& kept, const KeyLookup& key_with_id) {
  HttpRequest req;
  req.method = "POST";
  req.path = router::EndpointPath(router::Endpoint::kResponses);
  req.remote_addr = "restart";
  const json j = json::parse(kept, nullptr, false);
  if (!j.is_object()) return req;
  if (j.value("body", json()).is_string()) req.body = j["body"].get<std::string>();
  RestoreHeaders(j.value("headers", json()), key_with_id, &req);
  return req;
}

// Sets a background response's stored status (and error) while it has no
// answer. A status that ends it (failed, cancelled) also drops the request
// that would run it again after a restart.
void SetPendingStatus(ResponseStore* store, const std::string& owner, const std::string& id,
                      const char* status, const json& error, int64_t now) {
  auto rec = store->Get(owner, id, now);
  if (!rec.ok() || !Unfinished(StatusOf(rec->response))) return;  // deleted, or answered
  json r = json::parse(rec->response, nullptr, false);
  if (!r.is_object()) return;
  r["status"] = status;
  if (!error.is_null()) r["error"] = error;
  rec->response = DumpLossy(r);
  if (!Unfinished(status)) rec->request.clear();
  if (Status st = store->Put(*rec, now); !st.ok()) {
    spdlog::warn("responses: background {} not updated: {}", id, st.message());
  }
}

}  // namespace

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
  rec.context = "[]";             // nothing to continue until it has an answer
  rec.request = RunRequest(req);  // to run it again if a stop or a crash cuts it
  if (Status st = responses_->Put(rec, now); !st.ok()) return SendError(res, st);
  std::shared_ptr<ResponseTurn> shared(std::move(turn));
  auto run = background_->Start(rec.id, rec.owner,
                                [this, shared, req](const std::shared_ptr<BackgroundRun>& r) {
                                  RunBackground(std::move(*shared), req, r);
                                });
  if (!run.ok()) {
    if (!shared->resumed) (void)responses_->Delete(rec.owner, rec.id, now);
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
  auto set_status = [&](const char* status, const json& error) {
    SetPendingStatus(store, owner, id, status, error, clock->UnixSeconds());
  };
  // The run opens queued, as OpenAI's does: a reader that comes before the
  // model has it (the box may be full) sees that much.
  {
    const std::string queued = PendingResponseBody(turn.info, "queued");
    for (const char* type : {"response.created", "response.queued"}) {
      json e = {{"type", type},
                {"sequence_number", run->events()},
                {"response", json::parse(queued, nullptr, false)}};
      run->Write(SseEvent(type, DumpLossy(e)));
    }
  }
  // A box that is full does not fail the run: it waits its turn (queued)
  // up to kMaxQueuedMs — an interactive request gets a 503 after
  // max_queue_wait instead; a run has no client waiting on a socket. It
  // waits in the scheduler's queue (patient: a request a client waits on
  // takes its place when the queue is full), and asks again when it was
  // turned away (a full queue, a displaced place, an upstream's 429).
  HttpResponse res;
  const auto queued_since = clock->Now();
  for (;;) {
    res = HttpResponse();
    ResponseTurn attempt(turn);  // a copy: a retry needs the turn again
    const auto waited =
        std::chrono::duration_cast<std::chrono::milliseconds>(clock->Now() - queued_since);
    attempt.call.max_queue_wait_ms = std::max<int64_t>(1, kMaxQueuedMs - waited.count());
    RunResponse(std::move(attempt), req, res);
    const bool busy = !res.streamed() && (res.status == 429 || res.status == 503);
    if (!busy || run->cancelled() ||
        clock->Now() - queued_since > std::chrono::milliseconds(kMaxQueuedMs)) {
      break;
    }
    spdlog::debug("responses: background {} waits for a free session ({})", id, res.status);
    const int64_t retry_ms =
        std::clamp<int64_t>(1000 * std::atoll(res.header("Retry-After").c_str()), 200, 2000);
    for (int64_t slept = 0; slept < retry_ms && !run->cancelled(); slept += 50) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  std::string error_body;
  if (res.streamed() && res.status == 200) {
    RunWriter writer(run.get(), [&] {
      set_status("in_progress", nullptr);
      run->MarkStarted();
    });
    while (res.provider(writer)) {
    }
    writer.Flush();
    if (res.on_end) res.on_end(!run->cancelled());
  } else {
    error_body = res.body;
  }
  // Answered (completed or incomplete): the Keeper has stored it. Cut by a
  // stop: queued again, to run from the start at the next one. Else it ends
  // failed, or cancelled when its client asked.
  if (run->shut_down()) {
    set_status("queued", nullptr);
    return;
  }
  if (run->cancelled()) {
    set_status("cancelled", nullptr);
    return;
  }
  bool ended = false;
  set_status("failed", RunError(run->EventsAfter(-1, 0, &ended), error_body));
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

size_t HttpServer::ResumeBackground() {
  if (responses_ == nullptr || background_ == nullptr) return 0;
  auto runs = responses_->Unfinished(clock_->UnixSeconds());
  if (!runs.ok()) {
    spdlog::error("responses: unfinished background responses not read: {}",
                  runs.status().message());
    return 0;
  }
  size_t resumed = 0;
  for (const StoredResponse& rec : *runs) {
    const HttpRequest req =
        FromRunRequest(rec.request, [this](const std::string& id) { return KeyWithId(id); });
    HttpResponse res;
    // Read and checked again: what it names (a conversation, an earlier
    // response, a model) may have gone with the restart.
    std::unique_ptr<ResponseTurn> turn;
    if (options_.api_keys.required() && !req.has_header("Authorization")) {
      // Its key (kept by its id) is not among the keys this start knows.
      SendError(res, Status(StatusCode::kPermissionDenied, "its API key is no longer accepted"));
    } else if (OwnerOf(req) != rec.owner) {
      SendError(res, Status(StatusCode::kPermissionDenied,
                            "its API key is no longer the one it was made with"));
    } else if (Status st = options_.api_keys.required()
                               ? options_.api_keys.Check(req.header("Authorization"))
                               : Status::Ok();
               !st.ok()) {
      SendError(res, st);  // a key no longer accepted runs nothing
    } else {
      turn = PrepareResponse(req, res);
    }
    if (turn != nullptr) {
      turn->resumed = true;
      turn->call.id = turn->info.id = rec.id;
      turn->info.created_at = rec.created_at;
      StartBackground(std::move(turn), req, res);
    }
    if (res.status == 200) {
      ++resumed;
      continue;
    }
    const json body = json::parse(res.body, nullptr, false);
    const json e = body.is_object() ? body.value("error", json()) : json();
    const std::string why = e.is_object() && e.value("message", json()).is_string()
                                ? e["message"].get<std::string>()
                                : "status " + std::to_string(res.status);
    spdlog::warn("responses: background {} cannot run again after the restart: {}", rec.id, why);
    SetPendingStatus(responses_, rec.owner, rec.id, "failed",
                     {{"code", "server_error"},
                      {"message",
                       "the server restarted before the answer was whole, and it "
                       "could not run again: " +
                           why}},
                     clock_->UnixSeconds());
  }
  if (resumed > 0) {
    spdlog::info("responses: {} background response(s) left unfinished run again from the start",
                 resumed);
  }
  return resumed;
}

}  // namespace outpost::api

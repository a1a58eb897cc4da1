// HttpServer — the OpenAI-compatible HTTP front end.
//
// Routes: POST /v1/chat/completions, POST /v1/completions, POST /v1/responses, GET /v1/models,
// GET /v1/models/{id}, POST /tokenize and /detokenize, /v1/files and /v1/batches (batch_api.h),
// GET /health, GET /ready, GET /metrics, GET / (the dashboard) and /admin/ (admin_api.h: its
// own key, never the API keys).
//
// Threads: an HttpFront (http_front.h) holds the connections on a few event
// loops and runs Serve() on its worker pool (n_http_threads) for each
// complete request. Workers parse and validate requests into
// router::CompletionCalls, hand them to the router::Dispatcher with an
// HttpSink, and write the answer that the engine or relay thread pushes into
// it. They never reach the scheduler or the engine. Owned by the app; Run()
// blocks until Stop() is called from another thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "outpost/api/api_keys.h"
#include "outpost/api/api_stats.h"
#include "outpost/api/background_runs.h"
#include "outpost/api/http_front.h"
#include "outpost/api/http_message.h"
#include "outpost/api/openai_request.h"
#include "outpost/models/serving_set.h"
#include "outpost/router/dispatcher.h"
#include "outpost/router/router.h"
#include "outpost/telemetry/history.h"
#include "outpost/telemetry/stat_registry.h"
#include "outpost/util/clock.h"
#include "outpost/util/random.h"
#include "outpost/util/status.h"

namespace outpost::telemetry {
class Uplink;
}  // namespace outpost::telemetry
namespace outpost::audit {
class AuditLog;
}  // namespace outpost::audit

namespace outpost::api {

class AdminApi;
class BatchApi;
class ResponseStore;
class ConversationStore;
class HttpSink;

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  size_t max_body_bytes = 4 << 20;     // larger bodies get 413
  int n_http_threads = 64;             // requests handled at once (idle connections need none)
  int io_threads = 2;                  // event loops holding the connections
  int64_t idle_timeout_ms = 600'000;   // an idle keep-alive connection is closed after this
  int64_t header_timeout_ms = 10'000;  // a request head must arrive within this of its first byte
  int64_t body_timeout_ms = 60'000;    // and its body within this
  int64_t write_timeout_ms = 60'000;   // a client that reads nothing for this long is cut off
  size_t max_header_bytes = 16 << 10;  // larger request heads get 431
  size_t max_connections = 8192;       // in total; idle ones are shed first
  size_t max_connections_per_client = 1024;  // per client address
  ApiKeys api_keys;                          // none: the API is open
  // HTTPS when both are set (PEM files); ReloadTls() re-reads them.
  std::string tls_cert_file;
  std::string tls_key_file;
  bool metrics_require_key = false;  // /metrics needs a key too (/health, /ready never)
};

// What a relayed Responses answer gets here.
struct RelayedResponse {
  // A JSON object set on every Response object the relay carries — what
  // this server decided (store, previous_response_id, conversation,
  // background, a background response's id); "" sets nothing.
  std::string fields;
  // Gets the final Response object (with `fields`), a 200 body or the one a
  // stream ended with, before the client has all of it; may be null.
  std::function<void(const std::string&)> keep;
  // The stream's end counts the request in /metrics (a background run's,
  // whose create was counted, does not).
  bool counted = true;
};

class HttpServer {
 public:
  // Background responses running at once, at most.
  static constexpr size_t kMaxBackgroundRuns = 64;
  // router may be null (no upstreams configured: everything is served here;
  // the routing headers are then ignored). All must outlive the server.
  // /metrics renders `stats`, where the server registers its own.
  HttpServer(HttpOptions options, const models::ServingSet* serving, router::Dispatcher* dispatcher,
             telemetry::StatRegistry* stats, router::Router* router = nullptr,
             const util::Clock* clock = &util::RealClock(),
             util::Random* random = &util::RealRandom());
  ~HttpServer();

  // Binds the listening socket. Errors: Unavailable naming host:port.
  Status Bind();
  // HTTPS only: loads the certificate and key files again (after renewal) for
  // the connections accepted from now on; on error the old pair stays.
  // Errors: InvalidArgument naming tls_cert_file or tls_key_file.
  Status ReloadTls();
  bool tls() const { return !options_.tls_cert_file.empty(); }
  // Serves until Stop(). REQUIRES: Bind() succeeded.
  void Run();
  void Stop();
  // Drain on shutdown: see HttpFront.
  void StopAccepting() { front_->StopAccepting(); }
  int64_t InFlight() const { return front_->InFlight(); }
  bool Responsive(int64_t timeout_ms) { return front_->Responsive(timeout_ms); }
  int port() const { return front_->port(); }
  // The last hour for the dashboard (GET /dashboard/history); optional, set
  // before Run(); must outlive the server.
  void SetHistory(const telemetry::History* history) { history_ = history; }
  // The uplink's state for the dashboard (null: not configured).
  void SetUplink(telemetry::Uplink* uplink) { uplink_ = uplink; }
  // One audit record per completion request (null: no audit log).
  void SetAudit(audit::AuditLog* audit) { audit_ = audit; }
  // /admin/ (null: those paths are 404s); set before Run(); must outlive
  // the server.
  void SetAdmin(AdminApi* admin) { admin_ = admin; }
  // /v1/files and /v1/batches (null: those paths are 404s); set before
  // Run(); must outlive the server.
  void SetBatchApi(BatchApi* batch) { batch_ = batch; }
  // Stored Responses API answers (store, previous_response_id, GET/DELETE
  // /v1/responses/{id}, background responses), each kept `retention_s`
  // (null: none are stored); set before Run(); must outlive the server.
  void SetResponseStore(ResponseStore* store, int64_t retention_s);
  // Background responses queued or running now. Thread-safe.
  size_t BackgroundRunning() const { return background_ == nullptr ? 0 : background_->Running(); }
  // Of those, the ones the model has begun: what a stop's drain waits for.
  size_t BackgroundStarted() const { return background_ == nullptr ? 0 : background_->Started(); }
  // Runs again the background responses the last process left unfinished
  // (ResponseStore::Unfinished), as they were asked; one that cannot be
  // (its conversation or model gone) is failed saying why. Call once the
  // models are loaded and before the server says it is ready, so that the
  // runs hold their conversations before any client's turn can. Returns
  // how many run again.
  size_t ResumeBackground();
  // Cuts the background runs still going (a stop, after its drain): each
  // goes back to queued, to run again at the next start. Waits for them.
  void StopBackground() {
    if (background_ != nullptr) background_->Stop();
  }
  // The Conversations API (/v1/conversations and a Responses request's
  // `conversation`; null: those are refused); set before Run(); must
  // outlive the server.
  void SetConversationStore(ConversationStore* store) { conversations_ = store; }
  // One request served in-process exactly as one that came over HTTP (keys,
  // routing, audit, metrics): how the batch runner runs a line. Blocks until
  // the response is whole, or is a stream's provider (never for a batch
  // line: they do not stream). Thread-safe. One difference: an answer
  // refusing it for capacity (503, 429) is not counted in
  // outpost_requests_total — the runner runs the line again and counts it
  // as outpost_batch_lines_total{outcome="refused"}, so batch work yielding
  // to users never reads as a server failing.
  void Execute(const HttpRequest& req, HttpResponse& res) { Serve(req, res, /*in_process=*/true); }
  // The key a kept request names by its id (kept_request.h): one of the API
  // keys, else a routing tenant's; "" when none has that id now.
  std::string KeyWithId(const std::string& id) const;

 private:
  // /metrics: the front's connection counters.
  void RegisterFrontStats();
  // Every request: the API key, the route, the request counter (see
  // Execute() for an in-process request).
  void Serve(const HttpRequest& req, HttpResponse& res, bool in_process = false);
  void Route(const HttpRequest& req, HttpResponse& res);
  void HandleCompletion(Endpoint endpoint, const HttpRequest& req, HttpResponse& res);
  // POST /infill: llama-server's fill-in-the-middle endpoint, in its native
  // shape (infill_handler.cc).
  void HandleInfill(const HttpRequest& req, HttpResponse& res);
  // POST /v1/responses: OpenAI's Responses API over the chat path.
  void HandleResponses(const HttpRequest& req, HttpResponse& res);
  struct ResponseTurn;  // responses_turn.h
  // The body read, checked and held (its conversation) as a turn; null
  // when an error has been written to `res`. It does not ask whether the
  // server is ready: HandleResponses does, and ResumeBackground runs before
  // the server says it is.
  std::unique_ptr<ResponseTurn> PrepareResponse(const HttpRequest& req, HttpResponse& res);
  // The turn answered into `res`: a Response body or its event stream.
  void RunResponse(ResponseTurn turn, const HttpRequest& req, HttpResponse& res);
  // background: true — the turn runs on a thread of its own (background_),
  // `res` gets the queued Response, or the run's event stream.
  void StartBackground(std::unique_ptr<ResponseTurn> turn, const HttpRequest& req,
                       HttpResponse& res);
  // The work of a background run: the turn streamed into `run`, then its
  // end (failed, cancelled) kept if no answer was.
  void RunBackground(ResponseTurn turn, HttpRequest req, std::shared_ptr<BackgroundRun> run);
  // A run's events after `after`, as a stream that ends with the run.
  void StreamBackground(std::shared_ptr<BackgroundRun> run, int64_t after, const std::string& route,
                        HttpResponse& res);
  // The call's priority, routing headers, key, session and body from the
  // request (call->request already parsed). Errors: InvalidArgument naming
  // the header.
  Status ReadCallHeaders(const HttpRequest& req, router::CompletionCall* call);
  // Dispatches `call` through the audit and content-capture sinks. An error
  // (passed through error_for_endpoint, which names the endpoint's fields)
  // or a relayed answer is written to `res` here and null is returned; a
  // local answer returns its sink, started, with the route headers set.
  // `relayed` (a Responses request's; may be null): what its answer gets
  // if an upstream writes it.
  std::shared_ptr<HttpSink> DispatchCall(router::CompletionCall call, const HttpRequest& req,
                                         HttpResponse& res,
                                         const std::function<Status(Status)>& error_for_endpoint,
                                         const RelayedResponse* relayed = nullptr);
  // GET / DELETE /v1/responses/{id}, GET .../input_items, POST .../cancel,
  // and POST /v1/responses/input_tokens.
  void HandleStoredResponse(const HttpRequest& req, HttpResponse& res);
  void HandleInputTokens(const HttpRequest& req, HttpResponse& res);
  // Whose files, batches and stored responses a request sees: its API key's
  // id when keys are required, else "" (everyone's).
  std::string OwnerOf(const HttpRequest& req) const;
  void HandleReady(HttpResponse& res);
  // id empty: the list.
  void HandleModels(const std::string& id, HttpResponse& res);
  void HandleMetrics(HttpResponse& res);
  void HandleEmbeddings(const HttpRequest& req, HttpResponse& res);
  // POST /tokenize, POST /detokenize (tokenize_handler.cc).
  void HandleTokenize(const HttpRequest& req, HttpResponse& res);
  void HandleDetokenize(const HttpRequest& req, HttpResponse& res);
  // /v1/completions with several prompts (call.request.batch_prompts).
  void HandlePromptBatch(router::CompletionCall call, const HttpRequest& req, HttpResponse& res);

  const HttpOptions options_;
  const models::ServingSet* const serving_;
  router::Dispatcher* const dispatcher_;
  telemetry::StatRegistry* const registry_;
  const ApiStats stats_;
  router::Router* const router_;
  const telemetry::History* history_ = nullptr;
  telemetry::Uplink* uplink_ = nullptr;
  audit::AuditLog* audit_ = nullptr;
  AdminApi* admin_ = nullptr;
  BatchApi* batch_ = nullptr;
  ResponseStore* responses_ = nullptr;
  int64_t responses_retention_s_ = 0;
  std::unique_ptr<BackgroundRuns> background_;  // with a response store
  ConversationStore* conversations_ = nullptr;
  const bool routing_enabled_;
  const util::Clock* const clock_;
  util::Random* const random_;  // request ids
  std::unique_ptr<HttpFront> front_;
};

}  // namespace outpost::api

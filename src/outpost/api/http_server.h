// HttpServer — the OpenAI-compatible HTTP front end.
//
// Routes: POST /v1/chat/completions, POST /v1/completions, GET /v1/models,
// GET /v1/models/{id}, GET /health, GET /ready, GET /metrics.
//
// Threads: cpp-httplib worker pool (n_http_threads). Workers parse and
// validate requests into router::CompletionCalls, hand them to the
// router::Dispatcher with an HttpSink, and write the answer that the engine
// or relay thread pushes into it. They never reach the scheduler or the
// engine. Owned by the app; Run() blocks until Stop() is called from another
// thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "outpost/api/api_keys.h"
#include "outpost/api/api_stats.h"
#include "outpost/api/openai_request.h"
#include "outpost/models/serving_set.h"
#include "outpost/router/dispatcher.h"
#include "outpost/router/router.h"
#include "outpost/telemetry/stat_registry.h"
#include "outpost/util/clock.h"
#include "outpost/util/random.h"
#include "outpost/util/status.h"

namespace httplib {
class Server;
class Request;
class Response;
}  // namespace httplib

namespace outpost::api {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  size_t max_body_bytes = 4 << 20;  // larger bodies get 413
  int n_http_threads = 64;          // concurrent connections served
  int64_t idle_timeout_s = 600;     // read/write timeout per connection
  ApiKeys api_keys;                 // none: the API is open
  // HTTPS when both are set (PEM files); ReloadTls() re-reads them.
  std::string tls_cert_file;
  std::string tls_key_file;
  bool metrics_require_key = false;  // /metrics needs a key too (/health, /ready never)
};

class HttpServer {
 public:
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
  int port() const { return bound_port_; }

 private:
  void Routes();
  void HandleCompletion(Endpoint endpoint, const httplib::Request& req, httplib::Response& res);
  // The error envelope with the status's HTTP code (and Retry-After).
  static void SendError(httplib::Response& res, const Status& st);
  void HandleReady(httplib::Response& res);
  void HandleModels(const httplib::Request& req, httplib::Response& res);
  void HandleEmbeddings(const httplib::Request& req, httplib::Response& res);
  // /v1/completions with several prompts (call.request.batch_prompts).
  void HandlePromptBatch(router::CompletionCall call, const httplib::Request& req,
                         httplib::Response& res);

  const HttpOptions options_;
  const models::ServingSet* const serving_;
  router::Dispatcher* const dispatcher_;
  telemetry::StatRegistry* const registry_;
  const ApiStats stats_;
  router::Router* const router_;
  const bool routing_enabled_;
  const util::Clock* const clock_;
  util::Random* const random_;  // request ids
  std::unique_ptr<httplib::Server> server_;
  int bound_port_ = 0;
  int listen_fd_ = -1;  // the listening socket, once bound
  static constexpr int kListenBacklog = 1024;
};

}  // namespace outpost::api

// HttpServer — the OpenAI-compatible HTTP front end.
//
// Routes: POST /v1/chat/completions, POST /v1/completions, GET /v1/models,
// GET /v1/models/{id}, GET /health, GET /ready, GET /metrics.
//
// Threads: cpp-httplib worker pool (n_http_threads). Workers parse, validate,
// apply chat templates and tokenize, then hand requests to the model's
// Scheduler and stream its events back; they never touch llama.cpp state.
// Owned by the app; Run() blocks until Stop() is called from another thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "outpost/api/model_catalog.h"
#include "outpost/router/router.h"
#include "outpost/telemetry/metrics.h"
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
};

class HttpServer {
 public:
  // router may be null (no upstreams configured: everything is served here).
  HttpServer(HttpOptions options, ModelCatalog* catalog, telemetry::Metrics* metrics,
             router::Router* router = nullptr);
  ~HttpServer();

  // Binds the listening socket. Errors: Unavailable naming host:port.
  Status Bind();
  // Serves until Stop(). REQUIRES: Bind() succeeded.
  void Run();
  void Stop();
  int port() const { return bound_port_; }

 private:
  void Routes();
  void HandleGenerate(bool chat, const httplib::Request& req, httplib::Response& res);
  void HandleReady(httplib::Response& res);
  void HandleModels(const httplib::Request& req, httplib::Response& res);
  // Relays to upstream `name`; false (nothing sent) when it failed before the
  // first byte, with the cause in *last_error. `model` and `stream` are the
  // parsed request's (the body is not parsed again).
  bool TryProxy(const std::string& name, const std::string& endpoint, const std::string& reason,
                const std::string& model, bool stream, const httplib::Request& req,
                httplib::Response& res, Status* last_error);

  const HttpOptions options_;
  ModelCatalog* const catalog_;
  telemetry::Metrics* const metrics_;
  router::Router* const router_;
  std::unique_ptr<httplib::Server> server_;
  int bound_port_ = 0;
  int listen_fd_ = -1;  // the listening socket, once bound
  static constexpr int kListenBacklog = 1024;
};

}  // namespace outpost::api

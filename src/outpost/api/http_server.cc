#include "outpost/api/http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <spdlog/spdlog.h>
#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include <chrono>
#include <thread>

#include "outpost/api/errors.h"
#include "outpost/telemetry/prometheus_text.h"

namespace outpost::api {

using nlohmann::json;

HttpServer::HttpServer(HttpOptions options, const models::ServingSet* serving,
                       router::Dispatcher* dispatcher, telemetry::StatRegistry* stats,
                       router::Router* router, const util::Clock* clock, util::Random* random)
    : options_(std::move(options)),
      serving_(serving),
      dispatcher_(dispatcher),
      registry_(stats),
      stats_(ApiStats::Register(*stats)),
      router_(router),
      routing_enabled_(router != nullptr),
      clock_(clock),
      random_(random),
      server_(options_.tls_cert_file.empty()
                  ? std::make_unique<httplib::Server>()
                  : std::make_unique<httplib::SSLServer>(options_.tls_cert_file.c_str(),
                                                         options_.tls_key_file.c_str())) {
  const int threads = options_.n_http_threads;
  server_->new_task_queue = [threads] {
    return new httplib::ThreadPool(static_cast<size_t>(threads));
  };
  server_->set_payload_max_length(options_.max_body_bytes);
  server_->set_read_timeout(options_.idle_timeout_s, 0);
  server_->set_write_timeout(options_.idle_timeout_s, 0);
  server_->set_keep_alive_max_count(1000);
  // Small writes (SSE chunks, response heads) go out at once instead of waiting
  // on Nagle's algorithm and the peer's delayed ACK (up to 40 ms each).
  server_->set_tcp_nodelay(true);
  // cpp-httplib 0.11 (as Debian builds it) listens with a backlog of 5: a
  // burst of new connections overflows it and the dropped handshakes wait for
  // TCP's 1 s retransmit (measured: 44 of 300 simultaneous connections took
  // 1-4 s). Remember the listening socket here (this replaces the library's
  // default options, so SO_REUSEADDR is set again) and widen the backlog in
  // Bind().
  server_->set_socket_options([this](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    listen_fd_ = sock;
  });
  Routes();
}

HttpServer::~HttpServer() = default;

Status HttpServer::ReloadTls() {
  if (!tls()) return Status::Ok();
  // Check the pair on a scratch context first, so a bad renewal leaves the
  // served certificate alone.
  SSL_CTX* scratch = SSL_CTX_new(TLS_server_method());
  const bool cert_ok =
      SSL_CTX_use_certificate_chain_file(scratch, options_.tls_cert_file.c_str()) == 1;
  const bool key_ok =
      cert_ok &&
      SSL_CTX_use_PrivateKey_file(scratch, options_.tls_key_file.c_str(), SSL_FILETYPE_PEM) == 1 &&
      SSL_CTX_check_private_key(scratch) == 1;
  SSL_CTX_free(scratch);
  if (!cert_ok) {
    return Status::InvalidArgument(
        "tls_cert_file '" + options_.tls_cert_file + "' is not a readable PEM certificate",
        "tls_cert_file");
  }
  if (!key_ok) {
    return Status::InvalidArgument("tls_key_file '" + options_.tls_key_file +
                                       "' is not a readable PEM private key for that certificate",
                                   "tls_key_file");
  }
  SSL_CTX* live = static_cast<httplib::SSLServer*>(server_.get())->ssl_context();
  SSL_CTX_use_certificate_chain_file(live, options_.tls_cert_file.c_str());
  SSL_CTX_use_PrivateKey_file(live, options_.tls_key_file.c_str(), SSL_FILETYPE_PEM);
  return Status::Ok();
}

Status HttpServer::Bind() {
  if (tls()) {
    // The library loads the pair in its constructor; say which file is wrong.
    if (Status st = ReloadTls(); !st.ok()) return st;
    if (!server_->is_valid()) {
      return Status::InvalidArgument("TLS could not be set up", "tls_cert_file");
    }
  }
  if (options_.port == 0) {
    bound_port_ = server_->bind_to_any_port(options_.host);
    if (bound_port_ <= 0) return Status::Unavailable("cannot listen on " + options_.host);
  } else {
    if (!server_->bind_to_port(options_.host, options_.port)) {
      return Status::Unavailable("cannot listen on " + options_.host + ":" +
                                 std::to_string(options_.port) +
                                 " (address in use or not available)");
    }
    bound_port_ = options_.port;
  }
  // listen() again on a listening socket only changes its backlog (the kernel
  // caps it at net.core.somaxconn).
  if (listen_fd_ >= 0 && ::listen(listen_fd_, kListenBacklog) != 0) {
    spdlog::warn("could not widen the listen backlog to {}: {}", kListenBacklog,
                 std::strerror(errno));
  }
  return Status::Ok();
}

void HttpServer::Run() {
  server_->listen_after_bind();
}

void HttpServer::Stop() {
  // stop() is a no-op until the listen loop runs; wait for it (bounded) so a
  // Stop() right after Run() was spawned still takes effect.
  for (int i = 0; i < 2000 && !server_->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  server_->stop();
}

void HttpServer::SendError(httplib::Response& res, const Status& st) {
  res.status = HttpStatusFor(st.code());
  if (st.retry_after_s() > 0) res.set_header("Retry-After", std::to_string(st.retry_after_s()));
  res.set_content(ErrorBody(st), "application/json");
}

void HttpServer::Routes() {
  auto& s = *server_;

  // API keys: every path but /health, /ready (and /metrics unless configured).
  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!options_.api_keys.required() || req.path == "/health" || req.path == "/ready" ||
        (req.path == "/metrics" && !options_.metrics_require_key)) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    const Status st = options_.api_keys.Check(req.get_header_value("Authorization"));
    if (st.ok()) return httplib::Server::HandlerResponse::Unhandled;
    SendError(res, st);
    res.set_header("WWW-Authenticate", "Bearer");
    return httplib::Server::HandlerResponse::Handled;
  });

  s.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    HandleCompletion(Endpoint::kChat, req, res);
  });
  s.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
    HandleCompletion(Endpoint::kCompletion, req, res);
  });
  s.Post("/v1/embeddings", [this](const httplib::Request& req, httplib::Response& res) {
    HandleEmbeddings(req, res);
  });
  s.Get("/v1/models",
        [this](const httplib::Request& req, httplib::Response& res) { HandleModels(req, res); });
  s.Get(R"(/v1/models/(.+))",
        [this](const httplib::Request& req, httplib::Response& res) { HandleModels(req, res); });
  s.Get("/health", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"ok"})", "application/json");
  });
  s.Get("/ready", [this](const httplib::Request&, httplib::Response& res) { HandleReady(res); });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(telemetry::PrometheusText(registry_->Snapshot()),
                    "text/plain; version=0.0.4; charset=utf-8");
  });
  // Wrong method on a known path: 405 rather than a bare 404.
  for (const char* p : {"/v1/chat/completions", "/v1/completions"}) {
    s.Get(p, [](const httplib::Request& req, httplib::Response& res) {
      SendError(res,
                Status::InvalidArgument("method GET is not allowed on " + req.path + "; use POST"));
      res.status = 405;
      res.set_header("Allow", "POST");
    });
  }
  // Errors produced by httplib itself (unknown route, body too large) get an
  // OpenAI-shaped body too.
  s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    const int status = res.status;
    if (status == 413) {
      SendError(res, Status(StatusCode::kPayloadTooLarge,
                            "the request body is larger than the limit (max_body_size)"));
    } else if (status == 404) {
      SendError(res, Status::NotFound("no route for " + req.method + " " + req.path));
    } else {
      SendError(res, Status::InvalidArgument("the request could not be processed (HTTP " +
                                             std::to_string(status) + ")"));
    }
    res.status = status;
  });
  s.set_exception_handler(
      [](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown";
        try {
          if (ep) std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        spdlog::error("BUG: exception while serving {} {}: {}", req.method, req.path, what);
        SendError(res, Status::Internal("internal error: " + what));
      });
  s.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    // Streamed generation responses are counted when the stream ends.
    const bool streamed =
        res.status == 200 && res.get_header_value("Content-Type") == "text/event-stream";
    if (!streamed) {
      stats_.requests
          .With({req.path.rfind("/v1/models/", 0) == 0 ? "/v1/models/{id}" : req.path,
                 std::to_string(res.status)})
          .Add();
    }
    spdlog::debug("{} {} -> {}", req.method, req.path, res.status);
  });
}

void HttpServer::HandleReady(httplib::Response& res) {
  json j;
  if (!serving_->ready()) {
    j["status"] = "loading";
    res.status = 503;
    res.set_content(j.dump(), "application/json");
    return;
  }
  j["status"] = "ready";
  j["models"] = json::array();
  for (const auto& m : serving_->List()) {
    const auto snap = m->scheduler->Snapshot();
    const auto& p = m->plan;
    j["models"].push_back({
        {"id", m->id},
        {"max_sessions", snap.max_sessions},
        {"active", snap.active},
        {"queued", snap.queued},
        {"max_queue", snap.max_queue},
        {"decode_tokens_per_second", snap.decode_tokens_per_second},
        {"prefix_cache",
         {{"enabled", snap.prefix_cache},
          {"cached_tokens", snap.prefix_cache_tokens},
          {"cached_bytes", snap.prefix_cache_tokens * static_cast<int64_t>(p.kv_bytes_per_token)},
          {"prompt_tokens", snap.prompt_tokens},
          {"prompt_tokens_reused", snap.prompt_tokens_cached},
          {"hit_rate", snap.prompt_tokens > 0 ? static_cast<double>(snap.prompt_tokens_cached) /
                                                    static_cast<double>(snap.prompt_tokens)
                                              : 0.0}}},
        {"capacity",
         {{"weight_bytes", p.weight_bytes},
          {"kv_bytes_per_token", p.kv_bytes_per_token},
          {"kv_bytes_per_session", p.kv_bytes_per_session},
          {"ctx_per_session", p.ctx_per_session},
          {"overhead_bytes", p.overhead_bytes},
          {"memory_budget_bytes", p.budget_bytes},
          {"usable_bytes", p.usable_bytes},
          {"headroom_fraction", p.headroom_fraction},
          {"max_sessions_that_fit", p.max_sessions},
          {"sessions", p.sessions},
          {"peak_bytes", p.peak_bytes},
          {"required_bytes", p.required_bytes},
          {"reserved_bytes", m->memory ? m->memory->bytes() : 0}}},
    });
  }
  if (const models::MemoryLedger* ledger = serving_->ledger()) {
    // The one budget every loaded model is planned against.
    j["memory"] = {{"budget_bytes", ledger->budget()},
                   {"reserved_bytes", ledger->reserved()},
                   {"available_bytes", ledger->available()}};
  }
  if (router_ != nullptr) {
    j["upstreams"] = json::array();
    for (const auto& u : router_->cluster().Status()) {
      j["upstreams"].push_back({{"name", u.name},
                                {"kind", router::UpstreamKindName(u.kind)},
                                {"url", u.url},
                                {"healthy", u.healthy()},
                                {"health_flags", u.health_flags},
                                {"active_requests", u.active_requests},
                                {"max_requests", u.max_requests},
                                {"ejections", u.ejections}});
    }
  }
  res.set_content(j.dump(), "application/json");
}

void HttpServer::HandleModels(const httplib::Request& req, httplib::Response& res) {
  auto entry = [](const models::ServedModel& m) {
    return json{{"id", m.id}, {"object", "model"}, {"created", m.created}, {"owned_by", "outpost"}};
  };
  if (req.matches.size() > 1) {
    const std::string id = req.matches[1];
    auto m = serving_->Find(id);
    if (!m || id.empty()) {
      res.status = 404;
      res.set_content(ErrorBody(Status::NotFound("model '" + id + "' does not exist", "model")),
                      "application/json");
      return;
    }
    res.set_content(entry(*m).dump(), "application/json");
    return;
  }
  json data = json::array();
  for (const auto& m : serving_->List()) data.push_back(entry(*m));
  res.set_content(json{{"object", "list"}, {"data", data}}.dump(), "application/json");
}

}  // namespace outpost::api

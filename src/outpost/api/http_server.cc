#include "outpost/api/http_server.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "outpost/api/admin_api.h"
#include "outpost/api/audit_sink.h"
#include "outpost/api/batch_api.h"
#include "outpost/api/conversations_api.h"
#include "outpost/api/dashboard.h"
#include "outpost/api/errors.h"
#include "outpost/telemetry/prometheus_text.h"
#include "outpost/telemetry/uplink.h"

namespace outpost::api {

using nlohmann::json;

namespace {

HttpFrontOptions FrontOptions(const HttpOptions& o) {
  HttpFrontOptions f;
  f.host = o.host;
  f.port = o.port;
  f.io_threads = o.io_threads;
  f.worker_threads = o.n_http_threads;
  f.max_body_bytes = o.max_body_bytes;
  f.max_header_bytes = o.max_header_bytes;
  f.header_timeout_ms = o.header_timeout_ms;
  f.body_timeout_ms = o.body_timeout_ms;
  f.idle_timeout_ms = o.idle_timeout_ms;
  f.write_timeout_ms = o.write_timeout_ms;
  f.max_connections = o.max_connections;
  f.max_connections_per_client = o.max_connections_per_client;
  f.tls_cert_file = o.tls_cert_file;
  f.tls_key_file = o.tls_key_file;
  // The front's own errors (bad HTTP, limits) in the OpenAI envelope too.
  f.error_body = [](int status, const std::string& message, HttpResponse& res) {
    StatusCode code = StatusCode::kInvalidArgument;
    if (status == 413) code = StatusCode::kPayloadTooLarge;
    if (status == 503) code = StatusCode::kUnavailable;
    if (status >= 500 && status != 503) code = StatusCode::kInternal;
    res.set_content(ErrorBody(Status(code, message)), "application/json");
  };
  return f;
}

// The request counter's route label: known routes only (low cardinality).
std::string RouteLabel(const std::string& path) {
  static const char* const kRoutes[] = {"/",
                                        "/dashboard/history",
                                        "/v1/chat/completions",
                                        "/v1/completions",
                                        "/infill",
                                        "/v1/responses",
                                        "/v1/embeddings",
                                        "/tokenize",
                                        "/detokenize",
                                        "/v1/files",
                                        "/v1/batches",
                                        "/v1/conversations",
                                        "/v1/models",
                                        "/health",
                                        "/ready",
                                        "/metrics"};
  for (const char* r : kRoutes) {
    if (path == r) return path;
  }
  if (path.rfind("/v1/models/", 0) == 0) return "/v1/models/{id}";
  if (path.rfind("/v1/files/", 0) == 0) return "/v1/files/{id}";
  if (path.rfind("/v1/batches/", 0) == 0) return "/v1/batches/{id}";
  if (path.rfind("/v1/responses/", 0) == 0) return "/v1/responses/{id}";
  if (path.rfind("/v1/conversations/", 0) == 0) return "/v1/conversations/{id}";
  if (AdminApi::Owns(path)) return AdminRouteLabel(path);
  return "other";
}

}  // namespace

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
      front_(std::make_unique<HttpFront>(
          FrontOptions(options_),
          [this](const HttpRequest& req, HttpResponse& res) { Serve(req, res); })) {
  RegisterFrontStats();
}

void HttpServer::RegisterFrontStats() {
  // The front's counters, read when a snapshot is taken.
  const HttpFrontCounters* c = &front_->counters();
  auto family = [&](const char* name, const char* help, telemetry::StatType type,
                    std::vector<std::string> labels = {}) -> telemetry::Family& {
    return registry_->Register({name, help, type, std::move(labels), {}});
  };
  auto read = [](const std::atomic<int64_t>* v) {
    return [v] { return static_cast<double>(v->load(std::memory_order_relaxed)); };
  };
  family("outpost_http_connections", "Open HTTP connections (idle ones included).",
         telemetry::StatType::kGauge)
      .ComputedWith({}, read(&c->open));
  family("outpost_http_connections_accepted_total", "HTTP connections accepted.",
         telemetry::StatType::kCounter)
      .ComputedWith({}, read(&c->accepted));
  family("outpost_http_connections_shed_total",
         "Idle HTTP connections closed to make room under max_connections(_per_client).",
         telemetry::StatType::kCounter)
      .ComputedWith({}, read(&c->shed));
  family("outpost_http_connections_refused_total",
         "New HTTP connections refused: a connection limit was reached and every connection was "
         "busy.",
         telemetry::StatType::kCounter)
      .ComputedWith({}, read(&c->refused));
  family("outpost_http_accept_no_descriptors_total",
         "Accepts that met the process's file-descriptor limit (EMFILE/ENFILE); the waiting "
         "connection was closed.",
         telemetry::StatType::kCounter)
      .ComputedWith({}, read(&c->no_descriptors));
  auto& timeouts = family("outpost_http_timeouts_total",
                          "HTTP connections closed by a timeout, by kind (header: the request head "
                          "was too slow; body: its body; idle: keep-alive; write: the client took "
                          "nothing).",
                          telemetry::StatType::kCounter, {"kind"});
  timeouts.ComputedWith({"header"}, read(&c->header_timeouts));
  timeouts.ComputedWith({"body"}, read(&c->body_timeouts));
  timeouts.ComputedWith({"idle"}, read(&c->idle_timeouts));
  timeouts.ComputedWith({"write"}, read(&c->write_timeouts));
  family("outpost_http_bad_requests_total",
         "Requests the HTTP front refused before routing: unparseable, head or body too large.",
         telemetry::StatType::kCounter)
      .ComputedWith({}, read(&c->bad_requests));
}

HttpServer::~HttpServer() = default;

Status HttpServer::ReloadTls() {
  return front_->ReloadTls();
}

Status HttpServer::Bind() {
  return front_->Bind();
}

void HttpServer::Run() {
  front_->Run();
}

void HttpServer::Stop() {
  front_->Stop();
  // Every background run ends (failed: the server stopped) before the
  // stores they write to go.
  if (background_ != nullptr) background_->Stop();
}

void HttpServer::SetResponseStore(ResponseStore* store, int64_t retention_s) {
  responses_ = store;
  responses_retention_s_ = retention_s;
  // A finished run's events are kept 10 minutes for a client that resumes
  // its stream; as many run at once as the queue could hold.
  background_ = store == nullptr
                    ? nullptr
                    : std::make_unique<BackgroundRuns>(kMaxBackgroundRuns, 600'000, clock_);
}

std::string HttpServer::OwnerOf(const HttpRequest& req) const {
  if (!options_.api_keys.required()) return "";
  return ApiKeyId(PresentedKey(req.header("Authorization")));
}

std::string HttpServer::KeyWithId(const std::string& id) const {
  if (std::string key = options_.api_keys.KeyWithId(id); !key.empty()) return key;
  if (router_ == nullptr || id.empty()) return "";
  for (const auto& [key, tenant] : router_->config().tenants) {
    if (ApiKeyId(key) == id) return key;
  }
  return "";
}

void HttpServer::Serve(const HttpRequest& req, HttpResponse& res, bool in_process) {
  Route(req, res);
  // Streamed generation responses are counted when the stream ends.
  const bool streamed =
      res.status == 200 && res.streamed() && res.content_type == "text/event-stream";
  const bool run_again = in_process && (res.status == 503 || res.status == 429);
  if (!streamed && !run_again) {
    stats_.requests.With({RouteLabel(req.path), std::to_string(res.status)}).Add();
  }
  spdlog::debug("{} {} -> {}", req.method, req.path, res.status);
}

void HttpServer::Route(const HttpRequest& req, HttpResponse& res) {
  const std::string& path = req.path;
  // The admin API checks its own key; an API key never opens it.
  if (admin_ != nullptr && AdminApi::Owns(path)) return admin_->Handle(req, res);
  // API keys: every path but /health, /ready (and /metrics unless configured).
  // The dashboard page itself holds no data; its data follows /metrics' rule.
  const bool metrics_like = path == "/metrics" || path == "/dashboard/history";
  if (options_.api_keys.required() && path != "/health" && path != "/ready" && path != "/" &&
      !(metrics_like && !options_.metrics_require_key)) {
    const Status st = options_.api_keys.Check(req.header("Authorization"));
    if (!st.ok()) {
      SendError(res, st);
      res.set_header("WWW-Authenticate", "Bearer");
      return;
    }
  }
  if (batch_ != nullptr && BatchApi::Owns(path)) {
    // Files and batches belong to the key that made them.
    return batch_->Handle(req, res, OwnerOf(req));
  }
  if (IsConversationsPath(path)) {
    return ServeConversations(conversations_, responses_, req, res, OwnerOf(req), *clock_,
                              *random_);
  }
  const bool get = req.method == "GET" || req.method == "HEAD";  // HEAD: the front drops the body
  const bool post = req.method == "POST";
  if (path == "/v1/chat/completions" || path == "/v1/completions") {
    if (post) {
      return HandleCompletion(
          path == "/v1/chat/completions" ? Endpoint::kChat : Endpoint::kCompletion, req, res);
    }
    return SendNotAllowed(res, req, "POST");
  }
  if (path == "/infill") {
    if (post) return HandleInfill(req, res);
    return SendNotAllowed(res, req, "POST");
  }
  if (path == "/v1/responses") {
    if (post) return HandleResponses(req, res);
    return SendNotAllowed(res, req, "POST", "(GET /v1/responses/{id} retrieves one)");
  }
  if (path.rfind("/v1/responses/", 0) == 0) return HandleStoredResponse(req, res);
  if (post && path == "/v1/embeddings") return HandleEmbeddings(req, res);
  if (path == "/tokenize") {
    if (post) return HandleTokenize(req, res);
    return SendNotAllowed(res, req, "POST");
  }
  if (path == "/detokenize") {
    if (post) return HandleDetokenize(req, res);
    return SendNotAllowed(res, req, "POST");
  }
  if (get && path == "/v1/models") return HandleModels("", res);
  if (get && path.size() > 11 && path.rfind("/v1/models/", 0) == 0) {
    return HandleModels(path.substr(11), res);
  }
  if (get && path == "/health") return res.set_content(R"({"status":"ok"})", "application/json");
  if (get && path == "/ready") return HandleReady(res);
  if (get && path == "/metrics") return HandleMetrics(res);
  if (get && path == "/") {
    res.set_header("Cache-Control", "no-cache");
    return res.set_content(DashboardHtml(), "text/html; charset=utf-8");
  }
  if (get && path == "/dashboard/history") {
    if (history_ == nullptr) return SendError(res, Status::NotFound("no history is kept"));
    nlohmann::json j = history_->Json();
    j["uplink"] =
        uplink_ != nullptr ? uplink_->StatusJson() : nlohmann::json{{"configured", false}};
    return res.set_content(j.dump(), "application/json");
  }
  SendError(res, Status::NotFound("no route for " + req.method + " " + path));
}

void HttpServer::HandleMetrics(HttpResponse& res) {
  res.set_content(telemetry::PrometheusText(registry_->Snapshot()),
                  "text/plain; version=0.0.4; charset=utf-8");
}

void HttpServer::HandleReady(HttpResponse& res) {
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
        {"version", m->version.empty() ? json(nullptr) : json(m->version)},
        {"canary", admin_ != nullptr ? admin_->CanaryFor(m->id) : json(nullptr)},
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
                                              : 0.0},
          {"pinned",
           {{"prompts", snap.pinned_prompts},
            {"tokens", snap.pinned_tokens},
            {"restores", snap.pinned_restores}}}}},
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

void HttpServer::HandleModels(const std::string& id, HttpResponse& res) {
  auto entry = [](const models::ServedModel& m) {
    return json{{"id", m.id}, {"object", "model"}, {"created", m.created}, {"owned_by", "outpost"}};
  };
  if (!id.empty()) {
    auto m = serving_->Find(id);
    if (!m) {
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

// HttpServer::TryProxy — relays one request to an upstream chosen by the
// router. Retries happen only before anything was sent to the client: a
// connection failure, a first-byte timeout or a 5xx head returns false and the
// caller tries its next target. After the head, the body streams through
// chunk by chunk; an upstream that dies mid-stream ends the client's stream
// with an error event instead of hanging it.
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>

#include "outpost/api/errors.h"
#include "outpost/api/http_server.h"
#include "outpost/api/sse.h"
#include "outpost/router/proxy.h"
#include "outpost/router/router.h"

namespace outpost::api {
namespace {

constexpr std::chrono::milliseconds kPoll{50};

// Adds the usage of a complete JSON body (or one SSE data line) to the metrics.
void CountUsage(const std::string& json_text, telemetry::Metrics* m) {
  auto j = nlohmann::json::parse(json_text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("usage") || !j["usage"].is_object()) return;
  m->proxied_prompt_tokens_total += j["usage"].value("prompt_tokens", 0);
  m->proxied_completion_tokens_total += j["usage"].value("completion_tokens", 0);
}

struct RelayState {
  std::unique_ptr<router::UpstreamCall> call;
  router::Cluster* cluster = nullptr;
  std::string upstream;
  std::string line_buffer;  // for usage and [DONE] detection across chunks
  bool saw_done = false;
  bool finished = false;
  bool released = false;
  void Release() {
    if (!released) cluster->Release(upstream);
    released = true;
  }
};

}  // namespace

bool HttpServer::TryProxy(const std::string& name, const std::string& endpoint,
                          const std::string& reason, const httplib::Request& req,
                          httplib::Response& res, Status* last_error) {
  router::Cluster& cluster = router_->cluster();
  const router::UpstreamConfig* cfg = cluster.Find(name);
  if (cfg == nullptr) return false;
  if (!cluster.TryAcquire(name)) {
    *last_error = Status::Unavailable("upstream " + name + " is at its limit of " +
                                      std::to_string(cfg->max_requests) +
                                      " concurrent requests (circuit breaker)");
    return false;
  }
  // Aliases and local model ids mean nothing upstream: ask for a model the
  // upstream serves when it does not serve the one named.
  std::string body = req.body;
  if (auto j = nlohmann::json::parse(body, nullptr, false); j.is_object()) {
    const std::string model = j.value("model", "");
    const auto& ms = cfg->models;
    const bool any = std::find(ms.begin(), ms.end(), "*") != ms.end();
    if (!any && std::find(ms.begin(), ms.end(), model) == ms.end() && !ms.empty()) {
      j["model"] = ms.front();
      body = j.dump();
    }
  }
  auto call = std::make_unique<router::UpstreamCall>(*cfg, endpoint, std::move(body));
  auto head = call->WaitHead();
  if (!head.ok() || *head >= 500) {
    *last_error =
        head.ok()
            ? Status::Unavailable("upstream " + name + " answered HTTP " + std::to_string(*head))
            : head.status();
    spdlog::warn("route {} to {} failed before the first byte: {}", endpoint, name,
                 last_error->message());
    cluster.ReportFailure(name);
    cluster.Release(name);
    return false;
  }
  cluster.ReportSuccess(name);
  const std::string route = std::string(router::UpstreamKindName(cfg->kind)) + ":" + name;
  metrics_->CountRoute(route, reason);
  res.status = *head;
  res.set_header("X-Outpost-Route", route);
  res.set_header("X-Outpost-Route-Reason", reason);
  spdlog::debug("route {}: {} ({})", endpoint, route, reason);

  if (call->content_type().find("text/event-stream") == std::string::npos) {
    // Whole body, bounded by the upstream's total timeout.
    std::string body, chunk;
    bool idle = false;
    while (call->Next(&chunk, kPoll, &idle)) {
      if (!idle) body += chunk;
    }
    cluster.Release(name);
    const Status err = call->error();
    auto j = nlohmann::json::parse(body, nullptr, false);
    if (!err.ok() || j.is_discarded()) {
      const Status st =
          Status::Unavailable("upstream " + name + " returned " +
                              (err.ok() ? "a body that is not valid JSON" : err.message()));
      cluster.ReportFailure(name);
      res.status = 502;
      res.set_content(ErrorBody(st), "application/json");
      return true;
    }
    CountUsage(body, metrics_);
    res.set_content(body, "application/json");
    return true;
  }

  auto st = std::make_shared<RelayState>();
  st->call = std::move(call);
  st->cluster = &cluster;
  st->upstream = name;
  telemetry::Metrics* metrics = metrics_;
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [st, metrics, endpoint](size_t, httplib::DataSink& sink) {
        if (st->finished) {
          sink.done();
          return true;
        }
        std::string chunk;
        bool idle = false;
        if (!st->call->Next(&chunk, kPoll, &idle)) {
          // Upstream ended. A stream cut short gets a clear error, then [DONE].
          st->finished = true;
          st->Release();
          if (!st->saw_done) {
            const Status err = st->call->error();
            const std::string msg =
                err.ok() ? "upstream " + st->upstream + " ended the stream early" : err.message();
            const std::string tail = SseData(ErrorBody(Status::Unavailable(msg))) + SseDone();
            sink.write(tail.data(), tail.size());
            st->cluster->ReportFailure(st->upstream);
            metrics->CountRequest(endpoint, 502);
          } else {
            metrics->CountRequest(endpoint, 200);
          }
          sink.done();
          return true;
        }
        if (idle) return sink.is_writable();
        st->line_buffer += chunk;
        size_t nl;
        while ((nl = st->line_buffer.find('\n')) != std::string::npos) {
          const std::string line = st->line_buffer.substr(0, nl);
          st->line_buffer.erase(0, nl + 1);
          if (line.rfind("data: [DONE]", 0) == 0)
            st->saw_done = true;
          else if (line.rfind("data: {", 0) == 0 && line.find("\"usage\"") != std::string::npos) {
            CountUsage(line.substr(6), metrics);
          }
        }
        return sink.write(chunk.data(), chunk.size());
      },
      [st](bool) {
        st->call->Cancel();
        st->Release();
      });
  return true;
}

}  // namespace outpost::api

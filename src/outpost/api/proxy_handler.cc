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
#include "outpost/router/http1_client.h"
#include "outpost/router/proxy.h"
#include "outpost/router/router.h"

namespace outpost::api {
namespace {

constexpr std::chrono::milliseconds kPoll{50};

// Validates a JSON text and picks out usage.prompt_tokens and
// usage.completion_tokens without building a document (relayed bodies are
// only checked and counted, never changed).
class UsageScanner : public nlohmann::json_sax<nlohmann::json> {
 public:
  // False when `text` is not valid JSON.
  bool Scan(const std::string& text) {
    return nlohmann::json::sax_parse(text, this, nlohmann::json::input_format_t::json,
                                     /*strict=*/true);
  }
  void AddTo(telemetry::Metrics* m) const {
    m->proxied_prompt_tokens_total += prompt_;
    m->proxied_completion_tokens_total += completion_;
  }

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t v) override { return Number(v); }
  bool number_unsigned(number_unsigned_t v) override { return Number(static_cast<int64_t>(v)); }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    // Entering the top-level "usage" object puts us at depth 2 inside it.
    if (depth_ == 1) in_usage_ = key_ == "usage";
    ++depth_;
    return true;
  }
  bool key(string_t& k) override {
    if (depth_ <= 2) key_ = k;
    return true;
  }
  bool end_object() override {
    if (--depth_ == 1) in_usage_ = false;
    return true;
  }
  bool start_array(std::size_t) override {
    ++depth_;
    return true;
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  bool Number(int64_t v) {
    if (in_usage_ && depth_ == 2) {
      if (key_ == "prompt_tokens") prompt_ = v;
      if (key_ == "completion_tokens") completion_ = v;
    }
    return true;
  }
  int depth_ = 0;
  bool in_usage_ = false;
  std::string key_;
  int64_t prompt_ = 0, completion_ = 0;
};

// The body to send: aliases and local model ids mean nothing upstream, so a
// model the upstream does not serve becomes the first one it does. Only then
// is the body parsed and re-serialised.
std::string UpstreamBody(const router::UpstreamConfig& cfg, const std::string& model,
                         const std::string& body) {
  const auto& ms = cfg.models;
  if (ms.empty() || std::find(ms.begin(), ms.end(), "*") != ms.end() ||
      std::find(ms.begin(), ms.end(), model) != ms.end()) {
    return body;
  }
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object()) return body;
  j["model"] = ms.front();
  return j.dump();
}

// Answers the client with a whole upstream response: a JSON body as is (its
// usage counted), an event stream as is, anything broken or not JSON as 502.
void RelayWhole(const std::string& name, const Status& error, const router::UpstreamReply& reply,
                router::Cluster& cluster, telemetry::Metrics* metrics, httplib::Response& res) {
  if (error.ok() && reply.content_type.find("text/event-stream") != std::string::npos) {
    res.set_content(reply.body, "text/event-stream");
    return;
  }
  UsageScanner usage;
  if (!error.ok() || !usage.Scan(reply.body)) {
    const Status st = Status::Unavailable(error.ok() ? "upstream " + name +
                                                           " returned a body that is not valid JSON"
                                                     : error.message());
    cluster.ReportFailure(name);
    res.status = 502;
    res.set_content(ErrorBody(st), "application/json");
    return;
  }
  usage.AddTo(metrics);
  res.set_content(reply.body, "application/json");
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
                          const std::string& reason, const std::string& model, bool stream,
                          const httplib::Request& req, httplib::Response& res, Status* last_error) {
  router::Cluster& cluster = router_->cluster();
  const router::UpstreamConfig* cfg = cluster.Find(name);
  if (cfg == nullptr) return false;
  if (!cluster.TryAcquire(name)) {
    *last_error = Status::Unavailable("upstream " + name + " is at its limit of " +
                                      std::to_string(cfg->max_requests) +
                                      " concurrent requests (circuit breaker)");
    return false;
  }
  auto failed_before_first_byte = [&](Status st) {
    *last_error = std::move(st);
    spdlog::warn("route {} to {} failed before the first byte: {}", endpoint, name,
                 last_error->message());
    cluster.ReportFailure(name);
    cluster.Release(name);
    return false;
  };
  auto answered = [&](int status) {
    cluster.ReportSuccess(name);
    const std::string route = std::string(router::UpstreamKindName(cfg->kind)) + ":" + name;
    metrics_->CountRoute(route, reason);
    res.status = status;
    res.set_header("X-Outpost-Route", route);
    res.set_header("X-Outpost-Route-Reason", reason);
    spdlog::debug("route {}: {} ({})", endpoint, route, reason);
  };
  std::string body = UpstreamBody(*cfg, model, req.body);

  if (!stream) {
    // Whole body on this thread, bounded by the upstream's timeouts.
    router::UpstreamReply reply;
    const Status st = router::IsPlainHttp(cfg->base_url)
                          ? router::Http1Post(*cfg, &router_->sockets(), endpoint, body, &reply)
                          : router::FetchUpstream(*cfg, &router_->connections(), endpoint,
                                                  std::move(body), &reply);
    if (reply.status == 0) return failed_before_first_byte(st);
    if (reply.status >= 500) {
      return failed_before_first_byte(Status::Unavailable("upstream " + name + " answered HTTP " +
                                                          std::to_string(reply.status)));
    }
    answered(reply.status);
    cluster.Release(name);
    RelayWhole(name, st, reply, cluster, metrics_, res);
    return true;
  }

  auto call = std::make_unique<router::UpstreamCall>(*cfg, &router_->connections(), endpoint,
                                                     std::move(body));
  auto head = call->WaitHead();
  if (!head.ok()) return failed_before_first_byte(head.status());
  if (*head >= 500) {
    return failed_before_first_byte(
        Status::Unavailable("upstream " + name + " answered HTTP " + std::to_string(*head)));
  }
  answered(*head);
  if (call->content_type().find("text/event-stream") == std::string::npos) {
    // A whole-body answer to a stream request: relay it whole.
    router::UpstreamReply reply;
    reply.status = *head;
    reply.content_type = call->content_type();
    std::string chunk;
    bool idle = false;
    while (call->Next(&chunk, kPoll, &idle)) {
      if (!idle) reply.body += chunk;
    }
    cluster.Release(name);
    RelayWhole(name, call->error(), reply, cluster, metrics_, res);
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
            UsageScanner usage;
            if (usage.Scan(line.substr(6))) usage.AddTo(metrics);
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

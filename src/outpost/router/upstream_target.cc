#include "outpost/router/upstream_target.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "outpost/router/proxy.h"
#include "outpost/router/relay_scan.h"

namespace outpost::router {
namespace {

void AddUsage(const RelayedUsage& u, const RouterStats& s) {
  if (u.prompt_tokens > 0) s.proxied_prompt_tokens.Add(static_cast<uint64_t>(u.prompt_tokens));
  if (u.completion_tokens > 0)
    s.proxied_completion_tokens.Add(static_cast<uint64_t>(u.completion_tokens));
}

// The body to send: aliases and local model ids mean nothing upstream, so a
// model the upstream does not serve becomes the first one it does. Only then
// is the body parsed and re-serialised.
std::string UpstreamBody(const UpstreamConfig& cfg, const std::string& model,
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

// Hands a whole upstream answer to the sink: an event stream as is, a JSON
// body as is (its usage counted), anything broken or not JSON as 502.
void RelayWhole(const UpstreamConfig& cfg, const Status& error, const UpstreamReply& reply,
                Cluster& cluster, const RouterStats& stats, ResponseSink* sink) {
  if (error.ok() && reply.content_type.find("text/event-stream") != std::string::npos) {
    sink->OnRelayHead(reply.status, "text/event-stream");
    sink->OnRelayBody(reply.body);
    sink->OnRelayEnd(Status::Ok());
    return;
  }
  RelayedUsage usage;
  if (!error.ok() || !ScanUsage(reply.body, &usage)) {
    cluster.ReportFailure(cfg.name);
    sink->OnError(Status(StatusCode::kBadGateway,
                         error.ok()
                             ? "upstream " + cfg.name + " returned a body that is not valid JSON"
                             : error.message()));
    return;
  }
  AddUsage(usage, stats);
  sink->OnRelayHead(reply.status, "application/json");
  sink->OnRelayBody(reply.body);
  sink->OnRelayEnd(Status::Ok());
}

// A streamed relay in progress: the upstream call and what the stream has
// shown so far. Lives in the InFlight the dispatcher returns.
class StreamRelay final : public InFlight {
 public:
  StreamRelay(std::unique_ptr<UpstreamCall> call, const UpstreamConfig& cfg, Cluster* cluster,
              const RouterStats* stats, std::shared_ptr<ResponseSink> sink)
      : call_(std::move(call)),
        cfg_(cfg),
        cluster_(cluster),
        stats_(stats),
        sink_(std::move(sink)) {}
  ~StreamRelay() override {
    call_.reset();  // cancels and joins: no callback runs after this
    Release();
  }

  void Start() {
    call_->StreamTo([this](std::string chunk) { return OnChunk(std::move(chunk)); },
                    [this](Status error) { OnEnd(std::move(error)); });
  }

 private:
  // Relay thread. Watches for [DONE] and usage across chunk boundaries.
  bool OnChunk(std::string chunk) {
    if (sink_->Cancelled()) return false;
    const RelayedUsage before = scan_.usage();
    scan_.Feed(chunk);
    AddUsage({scan_.usage().prompt_tokens - before.prompt_tokens,
              scan_.usage().completion_tokens - before.completion_tokens},
             *stats_);
    sink_->OnRelayBody(std::move(chunk));
    return true;
  }

  // Relay thread. A stream cut short ends with a clear error.
  void OnEnd(Status error) {
    Release();
    if (!scan_.saw_done() && !sink_->Cancelled()) {
      cluster_->ReportFailure(cfg_.name);
      sink_->OnRelayEnd(Status::Unavailable(
          error.ok() ? "upstream " + cfg_.name + " ended the stream early" : error.message()));
      return;
    }
    sink_->OnRelayEnd(Status::Ok());
  }

  void Release() {
    if (!released_.exchange(true)) cluster_->Release(cfg_.name);
  }

  std::unique_ptr<UpstreamCall> call_;
  const UpstreamConfig& cfg_;
  Cluster* const cluster_;
  const RouterStats* const stats_;
  const std::shared_ptr<ResponseSink> sink_;
  SseScan scan_;
  std::atomic<bool> released_{false};
};

}  // namespace

UpstreamTarget::UpstreamTarget(Router* router) : router_(router) {}

bool UpstreamTarget::Try(UpstreamId id, const CompletionCall& call, const RouteReason& reason,
                         bool stream, const std::shared_ptr<ResponseSink>& sink,
                         std::unique_ptr<InFlight>* in_flight, Status* last_error) {
  Cluster& cluster = router_->cluster();
  const UpstreamConfig& cfg = cluster.Config(id);
  const std::string endpoint = EndpointPath(call.request.endpoint);
  if (!cluster.TryAcquire(cfg.name)) {
    *last_error = Status::Unavailable("upstream " + cfg.name + " is at its limit of " +
                                      std::to_string(cfg.max_requests) +
                                      " concurrent requests (circuit breaker)");
    return false;
  }
  auto failed_before_first_byte = [&](Status st) {
    *last_error = std::move(st);
    spdlog::warn("route {} to {} failed before the first byte: {}", endpoint, cfg.name,
                 last_error->message());
    cluster.ReportFailure(cfg.name);
    cluster.Release(cfg.name);
    return false;
  };
  auto answered = [&]() {
    cluster.ReportSuccess(cfg.name);
    const RouteReport report{std::string(UpstreamKindName(cfg.kind)) + ":" + cfg.name,
                             reason.ToString()};
    router_->stats().route_decisions.With({report.route, report.reason}).Add();
    sink->OnRoute(report);
    spdlog::debug("route {}: {} ({})", endpoint, report.route, report.reason);
  };
  std::string body = UpstreamBody(cfg, call.request.model, call.body);

  if (!stream) {
    // Whole body on this thread, bounded by the upstream's timeouts.
    UpstreamReply reply;
    const Status st = router_->client().Post(cfg, endpoint, std::move(body), &reply);
    if (reply.status == 0) return failed_before_first_byte(st);
    if (reply.status >= 500) {
      return failed_before_first_byte(Status::Unavailable(
          "upstream " + cfg.name + " answered HTTP " + std::to_string(reply.status)));
    }
    answered();
    cluster.Release(cfg.name);
    RelayWhole(cfg, st, reply, cluster, router_->stats(), sink.get());
    return true;
  }

  std::unique_ptr<UpstreamCall> upstream_call =
      router_->client().PostStreaming(cfg, endpoint, std::move(body));
  auto head = upstream_call->WaitHead();
  if (!head.ok()) return failed_before_first_byte(head.status());
  if (*head >= 500) {
    return failed_before_first_byte(
        Status::Unavailable("upstream " + cfg.name + " answered HTTP " + std::to_string(*head)));
  }
  answered();
  if (upstream_call->content_type().find("text/event-stream") == std::string::npos) {
    // A whole-body answer to a stream request: relay it whole.
    UpstreamReply reply;
    reply.status = *head;
    reply.content_type = upstream_call->content_type();
    auto whole = upstream_call->ReadAll();
    if (whole.ok()) reply.body = std::move(whole).value();
    cluster.Release(cfg.name);
    RelayWhole(cfg, whole.status(), reply, cluster, router_->stats(), sink.get());
    return true;
  }
  sink->OnRelayHead(*head, "text/event-stream");
  auto relay = std::make_unique<StreamRelay>(std::move(upstream_call), cfg, &cluster,
                                             &router_->stats(), sink);
  relay->Start();
  *in_flight = std::move(relay);
  return true;
}

}  // namespace outpost::router

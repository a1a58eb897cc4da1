// HttpServer::ReadCallHeaders and HttpServer::DispatchCall — what every
// generating endpoint (/v1/chat/completions, /v1/completions, /v1/responses)
// does the same way: the call's identity and routing from the headers, the
// audit and content-capture sinks around the answer, the dispatch, and an
// answer that is not local (an error, or an upstream's body relayed as it
// came). The endpoint's own file writes the local answer in its own shape.
#include <memory>

#include "outpost/api/audit_sink.h"
#include "outpost/api/content_capture_sink.h"
#include "outpost/api/errors.h"
#include "outpost/api/http_server.h"
#include "outpost/api/http_sink.h"
#include "outpost/api/responses_response.h"
#include "outpost/api/sse.h"
#include "outpost/router/upstream_client.h"
#include "outpost/telemetry/uplink.h"

namespace outpost::api {
namespace {

constexpr size_t kMaxKeptStream = 16u << 20;

// A relayed stream across content-provider calls.
struct Relay {
  std::shared_ptr<HttpSink> sink;
  std::unique_ptr<router::InFlight> in_flight;  // the relay thread, cancelled and joined at the end
  bool finished = false;
  // For RelayedResponse::keep: the final Response, read from the stream as
  // it passes (an event line past kMaxKeptStream: not kept).
  FinalResponseReader final_response{kMaxKeptStream};
  bool kept = false;
  std::unique_ptr<ResponseFieldsPatch> patch;  // a Responses relay with fields to set
  std::function<void(const std::string&)> keep;
};

}  // namespace

Status HttpServer::ReadCallHeaders(const HttpRequest& req, router::CompletionCall* call) {
  const std::string key = PresentedKey(req.header("Authorization"));
  auto priority = ParsePriority(req.header("X-Outpost-Priority"));
  if (!priority.ok()) return priority.status();
  call->priority = AdmissionClass(*priority, call->request);
  if (routing_enabled_) {
    auto data_class = ParseDataClassHeader(req.header("X-Data-Class"));
    if (!data_class.ok()) return data_class.status();
    auto tier = ParseTierHeader(req.header("X-Outpost-Tier"));
    if (!tier.ok()) return tier.status();
    auto budget = ParseLatencyBudgetHeader(req.header("X-Latency-Budget-Ms"));
    if (!budget.ok()) return budget.status();
    call->data_class = *data_class;
    call->tier = *tier;
    call->latency_budget_ms = *budget;
    call->api_key = key;
    call->forwarded = req.has_header(router::kForwardedHeader);
  }
  call->session_id = req.header("X-Session-Id");
  if (call->api_key.empty() && req.header("Authorization").rfind("Bearer ", 0) == 0) {
    call->api_key = key;
  }
  call->body = req.body;
  return Status::Ok();
}

std::shared_ptr<HttpSink> HttpServer::DispatchCall(
    router::CompletionCall call, const HttpRequest& req, HttpResponse& res,
    const std::function<Status(Status)>& error_for_endpoint, const RelayedResponse* relayed) {
  const bool chat = call.request.endpoint != router::Endpoint::kCompletion;
  const bool responses = call.request.endpoint == router::Endpoint::kResponses;
  const std::string path = router::EndpointPath(call.request.endpoint);
  const std::string key = PresentedKey(req.header("Authorization"));
  auto sink = std::make_shared<HttpSink>(req.client_gone);
  std::shared_ptr<router::ResponseSink> target = sink;
  if (audit_ != nullptr) {
    AuditRequestInfo info;
    info.request_id = call.id;
    info.endpoint = path;
    info.key_id = ApiKeyId(key);
    if (router_ != nullptr) {
      const auto& tenants = router_->config().tenants;
      if (const auto it = tenants.find(key); it != tenants.end()) info.tenant = it->second.name;
    }
    info.data_class = req.header("X-Data-Class");
    info.model = call.request.model;
    target = std::make_shared<AuditSink>(target, audit_, std::move(info));
  }
  if (uplink_ != nullptr && router_ != nullptr) {
    // Content leaves through telemetry only for a tenant that allows it, and
    // never when the request's data is restricted.
    const auto& tenants = router_->config().tenants;
    const auto it = tenants.find(key);
    const bool restricted =
        router_->ResolveDataClass(key, call.data_class) == router::DataClass::kRestricted;
    if (it != tenants.end() && it->second.telemetry_content && !restricted) {
      ContentCaptureInfo info{call.id, chat ? "chat" : "text_completion", it->second.name,
                              call.request.model};
      telemetry::Uplink* uplink = uplink_;
      target = std::make_shared<ContentCaptureSink>(
          target, [uplink](telemetry::UplinkEvent e) { uplink->AddEvent(std::move(e)); },
          std::move(info), CaptureInput(call.request, kMaxContentBytes), clock_->UnixMillis());
    }
  }
  std::unique_ptr<router::InFlight> in_flight = dispatcher_->Dispatch(std::move(call), target);
  const HttpSink::Answer answer = sink->WaitStart();
  if (const auto& route = sink->route()) {
    res.set_header("X-Outpost-Route", route->route);
    res.set_header("X-Outpost-Route-Reason", route->reason);
  }
  for (const auto& [name, value] : sink->headers()) res.set_header(name, value);

  if (answer == HttpSink::Answer::kError) {
    sink->Cancel();
    SendError(res, error_for_endpoint(sink->error()));
    return nullptr;
  }
  if (answer == HttpSink::Answer::kLocal) return sink;

  // Relayed: the upstream's body as it came.
  res.status = sink->relay_status();
  if (!in_flight) {
    // A whole body, already here (the relay ran on this thread).
    std::string body;
    for (bool ended = false; !ended;) body += sink->Take(&ended);
    sink->Cancel();
    const bool whole = res.status == 200 && sink->relay_error().ok();
    if (whole && relayed != nullptr && !relayed->fields.empty()) {
      body = ResponseFieldsPatch(relayed->fields).Body(body);
    }
    if (whole && relayed != nullptr && relayed->keep) relayed->keep(body);
    res.set_content(body, sink->relay_content_type());
    return nullptr;
  }
  res.set_header("Cache-Control", "no-cache");
  auto st = std::make_shared<Relay>();
  st->sink = sink;
  st->in_flight = std::move(in_flight);
  if (relayed != nullptr && res.status == 200) {
    if (!relayed->fields.empty())
      st->patch = std::make_unique<ResponseFieldsPatch>(relayed->fields);
    st->keep = relayed->keep;
  }
  const ApiStats stats = stats_;
  const bool counted = relayed == nullptr || relayed->counted;
  res.set_stream(
      "text/event-stream",
      [st, stats, path, responses, counted](ChunkWriter& out) {
        if (st->finished) return false;
        bool ended = false;
        std::string data = st->sink->Take(&ended);
        if (st->patch) {
          data = st->patch->Feed(data);
          if (ended) data += st->patch->Finish();
        }
        if (st->keep && !st->kept && st->sink->relay_error().ok()) {
          // Kept as soon as its event has passed, before it goes out (an
          // upstream may close its stream later): a client that continues
          // the response at once finds it, and its conversation free for
          // the next turn.
          std::string r = st->final_response.Feed(data, ended);
          if (!r.empty()) {
            st->keep(r);
            st->kept = true;
          }
        }
        if (!data.empty() && !out.Write(data)) return false;
        if (!ended) return true;
        st->finished = true;
        if (!st->sink->relay_error().ok()) {
          // Cut short upstream: a clear error event, then the end of the stream.
          const Status cut = Status::Unavailable(st->sink->relay_error().message());
          out.Write(responses ? SseEvent("error", ResponsesErrorEvent(cut))
                              : SseData(ErrorBody(cut)) + SseDone());
          if (counted) stats.requests.With({path, "502"}).Add();
        } else if (counted) {
          stats.requests.With({path, "200"}).Add();
        }
        return false;
      },
      [st](bool) {
        st->sink->Cancel();
        st->in_flight.reset();  // cancels and joins a relay still running
      });
  return nullptr;
}

}  // namespace outpost::api

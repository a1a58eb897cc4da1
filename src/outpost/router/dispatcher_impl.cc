#include "outpost/router/dispatcher_impl.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>

#include "outpost/scheduler/collecting_sink.h"

namespace outpost::router {
namespace {

bool Retryable(const Status& st) {
  return st.code() == StatusCode::kResourceExhausted || st.code() == StatusCode::kUnavailable;
}

}  // namespace

DispatcherImpl::DispatcherImpl(const models::ServingSet* serving, Router* router)
    : local_(serving), router_(router) {
  if (router_ != nullptr) upstream_.emplace(router_);
}

void DispatcherImpl::Count(const std::string& route, const std::string& reason) const {
  router_->stats().route_decisions.With({route, reason}).Add();
}

std::unique_ptr<InFlight> DispatcherImpl::Dispatch(CompletionCall call,
                                                   std::shared_ptr<ResponseSink> sink) {
  const CompletionRequest& req = call.request;
  const char* endpoint = EndpointPath(req.endpoint);
  const auto served = local_.Find(call);
  scheduler::GenerationRequest gen;
  bool prepared = false;
  Status local_error;  // Prepare's, when this node's model cannot take the request
  std::optional<UpstreamId> cascade_to;
  RouteReason local_reason;

  if (router_ != nullptr && (call.forwarded || call.local_only)) {
    // Another Outpost forwarded it: answer here, never forward again. Or
    // only this node can give its answer's shape.
    local_reason.cause = call.forwarded ? RouteCause::kForwarded : RouteCause::kLocalOnly;
    const RouteReport report{"local", local_reason.ToString()};
    Count(report.route, report.reason);
    sink->OnRoute(report);
  } else if (router_ != nullptr) {
    RouteInput in;
    in.data_class = router_->ResolveDataClass(call.api_key, call.data_class);
    in.model = req.model;
    in.local_serves_model = served != nullptr;
    // An estimate for a request not prepared here (a model only upstream
    // serves, or one this model cannot take); a prepared one counts exactly.
    in.prompt_tokens = static_cast<int32_t>(call.body.size() / 4);
    if (served) {
      // Prompt tokens feed the difficulty rules; the local answer reuses them.
      local_error = LocalTarget::Prepare(*served, call, &gen);
      prepared = local_error.ok();
      if (prepared) {
        in.prompt_tokens = static_cast<int32_t>(gen.prompt.size());
        // What does not fit a local session goes up like a difficult request
        // (policy.h); kept here, the scheduler refuses it naming the limit.
        in.local_context = served->scheduler->options().ctx_per_session;
      }
      const auto snap = served->scheduler->Snapshot();
      in.local_full = snap.full;
      in.local_wait_ms = snap.estimated_wait_ms;
    }
    in.max_tokens = req.max_tokens > 0 ? req.max_tokens : 0;
    in.wants_tools = req.tools.active();
    in.tier = call.tier;
    in.stream = req.stream;
    in.latency_budget_ms =
        call.latency_budget_ms ? *call.latency_budget_ms : router_->TenantBudgetMs(call.api_key);
    const RouteDecision d = router_->Decide(in);
    // Prepare failing means this model cannot take it as asked (a `suffix` and
    // no FIM tokens, a template with no tool-call format, ...): what the policy
    // sends up anyway (X-Outpost-Tier: central, tools_go_central, ...) may
    // still be answered there; what would stay here gets this node's error.
    if (!local_error.ok() && (d.targets.empty() || d.targets.front().local())) {
      sink->OnError(local_error);
      return nullptr;
    }
    const std::string reason = d.reason.ToString();
    if (d.targets.empty()) {
      Count("reject", reason);
      sink->OnRoute(RouteReport{"reject", reason});
      spdlog::info("route {} {}: reject ({}) {}", endpoint, req.model, reason, d.reject.message());
      Status st = d.reject;
      sink->OnError(Retryable(st) ? std::move(st).WithRetryAfter(1) : st);
      return nullptr;
    }
    Status last_error;
    bool local = false;
    for (const Target& t : d.targets) {
      if (t.local()) {
        local = true;
        break;
      }
      std::unique_ptr<InFlight> in_flight;
      if (upstream_->Try(t.upstream, call, d.reason, req.stream, sink, &in_flight, &last_error)) {
        return in_flight;
      }
    }
    if (!local) {
      RouteReason failed = d.reason;
      failed.fallback = RouteFallback::kUpstreamsFailed;
      Count("reject", failed.ToString());
      sink->OnRoute(RouteReport{"reject", reason});
      sink->OnError(Status::Unavailable("no upstream could take the request (" + reason +
                                        "): " + last_error.message())
                        .WithRetryAfter(1));
      return nullptr;
    }
    Count("local", reason);
    spdlog::debug("route {} {}: local ({})", endpoint, req.model, reason);
    local_reason = d.reason;
    // The cascade judges one answer; several choices are answered here as asked.
    if (req.n == 1 && !req.tools.active()) cascade_to = d.cascade_to;
    // The cascade reports its route once it knows which answer stands.
    if (!cascade_to) sink->OnRoute(RouteReport{"local", reason});
  }

  if (!served) {
    sink->OnError(Status::NotFound(
        "the model '" + req.model + "' does not exist; GET /v1/models lists the served models",
        "model"));
    return nullptr;
  }
  if (!prepared) {
    if (Status st = LocalTarget::Prepare(*served, call, &gen); !st.ok()) {
      sink->OnError(st);
      return nullptr;
    }
  }
  // Cached prompt prefixes are shared only within one tenant and data class.
  if (router_ != nullptr) {
    gen.cache_scope =
        router_->CacheScope(call.api_key, router_->ResolveDataClass(call.api_key, call.data_class));
  }
  // A canary's shadow phase: perhaps the candidate answers it too, unseen.
  auto compare = local_.Mirror(*served, call, gen);
  if (cascade_to) {
    RunCascade(*served, std::move(gen), call, local_reason, *cascade_to, sink);
    return nullptr;
  }
  LocalTarget::Run(*served, std::move(gen), sink, std::move(compare));
  return nullptr;
}

void DispatcherImpl::RunCascade(const models::ServedModel& model, scheduler::GenerationRequest gen,
                                const CompletionCall& call, const RouteReason& reason,
                                UpstreamId central, const std::shared_ptr<ResponseSink>& sink) {
  gen.want_logprobs = true;
  // Announced first so the sink can watch its client while the local answer
  // is collected (a client that leaves cancels it).
  sink->OnLocalStart(LocalAnswerMeta{model.id, model.system_fingerprint, nullptr, model.version});
  // The local half of the cascade: the whole answer, collected before
  // anything reaches the client; cancelled when the client is gone.
  auto local = std::make_shared<scheduler::CollectingSink>([sink] { return sink->Cancelled(); });
  if (Status st = model.scheduler->Submit(std::move(gen), local); !st.ok()) {
    sink->OnRoute(RouteReport{"local", reason.ToString()});
    sink->OnError(st);
    return;
  }
  local->Wait();
  const scheduler::GenerationResult r = local->result();
  auto answer_locally = [&](const RouteReason& why) {
    sink->OnRoute(RouteReport{"local", why.ToString()});
    if (std::string text = local->text(); !text.empty()) sink->OnText(0, std::move(text));
    sink->OnDone(r);
  };
  if (r.finish == scheduler::FinishReason::kError) {
    sink->OnRoute(RouteReport{"local", reason.ToString()});
    sink->OnError(r.error);
    return;
  }
  // A low mean log-probability sends the request to central; both costs are
  // recorded (local tokens in the usual counters, central's in the proxied ones).
  const double mean = r.usage.sum_logprob / std::max(1, r.usage.completion_tokens);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", mean);
  sink->OnHeader("X-Outpost-Local-Mean-Logprob", buf);
  if (mean >= router_->config().policy.cascade_min_mean_logprob) {
    Count("cascade", "kept_local");
    answer_locally(reason);
    return;
  }
  sink->OnHeader("X-Outpost-Local-Completion-Tokens", std::to_string(r.usage.completion_tokens));
  Status last_error;
  std::unique_ptr<InFlight> unused;  // non-streaming: the answer is whole when Try returns
  RouteReason escalated = reason;
  escalated.cause = RouteCause::kCascadeLowConfidence;
  escalated.fallback = RouteFallback::kNone;
  if (upstream_->Try(central, call, escalated, /*stream=*/false, sink, &unused, &last_error)) {
    Count("cascade", "escalated");
    return;
  }
  Count("cascade", "escalation_failed");
  RouteReason kept = reason;
  kept.cause = RouteCause::kCascadeCentralFailed;
  kept.fallback = RouteFallback::kNone;
  answer_locally(kept);
}

}  // namespace outpost::router

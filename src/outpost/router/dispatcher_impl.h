// DispatcherImpl — the Dispatcher over this process's served models (through
// LocalTarget) and, when routing is configured, its upstreams (through
// UpstreamTarget and the Router's policy and cluster). See dispatcher.h.
#pragma once

#include <memory>
#include <optional>

#include "outpost/models/serving_set.h"
#include "outpost/router/dispatcher.h"
#include "outpost/router/local_target.h"
#include "outpost/router/router.h"
#include "outpost/router/upstream_target.h"
#include "outpost/telemetry/metrics.h"

namespace outpost::router {

class DispatcherImpl final : public Dispatcher {
 public:
  // `router` may be null (no routing file: everything is answered here). All
  // must outlive this object.
  DispatcherImpl(const models::ServingSet* serving, Router* router, telemetry::Metrics* metrics);

  std::unique_ptr<InFlight> Dispatch(CompletionCall call,
                                     std::shared_ptr<ResponseSink> sink) override;

 private:
  // Answers locally, then asks `central` instead when the local answer's mean
  // token log-probability is below the policy's threshold. Blocks the caller
  // until the local answer is complete.
  void RunCascade(const models::ServedModel& model, scheduler::GenerationRequest gen,
                  const CompletionCall& call, const RouteReason& reason, UpstreamId central,
                  const std::shared_ptr<ResponseSink>& sink);

  const LocalTarget local_;
  Router* const router_;
  telemetry::Metrics* const metrics_;
  std::optional<UpstreamTarget> upstream_;
};

}  // namespace outpost::router

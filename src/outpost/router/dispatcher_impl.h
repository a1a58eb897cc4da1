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

namespace outpost::router {

class DispatcherImpl final : public Dispatcher {
 public:
  // `router` may be null (no routing file: everything is answered here). Both
  // must outlive this object.
  DispatcherImpl(const models::ServingSet* serving, Router* router);

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
  // Counts one routing decision (route_decisions{route, reason}).
  void Count(const std::string& route, const std::string& reason) const;

  Router* const router_;
  std::optional<UpstreamTarget> upstream_;
};

}  // namespace outpost::router

// Routing policy — where one request goes: this node, a peer Outpost, or
// central. A pure function of the request's facts, the policy and the current
// health of the upstreams, so every decision can be tested as a table.
//
// Order of evaluation (first match decides; data class limits everything):
//   1. data class   restricted → this node only (scope node) or node + peers
//                   (scope site). Enforced here, in one place; clients cannot
//                   override it (the header can only name a class, and tenant
//                   settings win over the header).
//   2. model        served here → local; an alias or a model only an upstream
//                   serves → that upstream; nobody → 404.
//   3. difficulty   tier header, prompt tokens, max_tokens, tools/JSON schema →
//                   central (when the data class allows and central is up;
//                   else local with the reason recorded). A prompt, or a
//                   prompt plus max_tokens, that does not fit the local
//                   session context counts as difficult with no setting: this
//                   node could only refuse it.
//   4. load         local queueing longer than the latency budget (or the queue
//                   full) → peer, then central, then the local queue, then 503.
//   5. link down    central unhealthy: requests that could stay local do; those
//                   that cannot get 503 naming the reason.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "outpost/router/route_types.h"
#include "outpost/router/routing_config.h"
#include "outpost/util/status.h"

namespace outpost::router {

struct RouteInput {
  DataClass data_class = DataClass::kInternal;  // already resolved: tenant > header > default
  std::string model;                            // as requested ("" = the local default)
  bool local_serves_model = true;
  int32_t prompt_tokens = 0;      // estimate for remote-only models
  int32_t max_tokens = 0;         // 0 = not given
  int32_t local_context = 0;      // tokens one local session holds (0 = not known)
  bool wants_tools = false;       // tools
  bool stream = false;            // cascades apply to non-streaming requests only
  Tier tier = Tier::kAny;         // X-Outpost-Tier
  int64_t local_wait_ms = 0;      // expected wait for a local session
  bool local_full = false;        // the local queue would refuse the request
  int64_t latency_budget_ms = 0;  // 0 = none
};

// An upstream as the policy sees it right now.
struct UpstreamView {
  UpstreamId id = 0;
  std::string name;
  UpstreamKind kind = UpstreamKind::kCentral;
  std::vector<std::string> models;  // "*" = any
  bool available = true;            // healthy, not ejected, breaker closed
  bool Serves(const std::string& model) const;
};

struct RouteDecision {
  // Targets to try in order. A later target is tried only when an earlier one
  // fails before sending its first byte.
  std::vector<Target> targets;
  RouteReason reason;
  Status reject;  // non-OK when targets is empty: 403/404/503 with the reason
  // When set (local answers only): the central upstream to ask if the local
  // answer's mean log-probability falls below cascade_min_mean_logprob.
  std::optional<UpstreamId> cascade_to;
};

RouteDecision Decide(const RouteInput& in, const PolicyConfig& policy,
                     const std::vector<UpstreamView>& upstreams);

}  // namespace outpost::router

#include "outpost/router/policy.h"

#include <algorithm>

namespace outpost::router {

bool UpstreamView::Serves(const std::string& model) const {
  return std::find(models.begin(), models.end(), "*") != models.end() ||
         std::find(models.begin(), models.end(), model) != models.end();
}

namespace {

struct Allowed {
  bool peer = true;
  bool central = true;
};

// Available upstreams of a kind that serve `model`, in configuration order.
std::vector<Target> Candidates(const std::vector<UpstreamView>& ups, UpstreamKind kind,
                               const std::string& model, bool* any_configured) {
  std::vector<Target> out;
  for (const auto& u : ups) {
    if (u.kind != kind || !(model.empty() || u.Serves(model))) continue;
    *any_configured = true;
    if (u.available) out.push_back(Target::Upstream(u.id));
  }
  return out;
}

RouteDecision Go(std::vector<Target> targets, RouteReason reason) {
  RouteDecision d;
  d.targets = std::move(targets);
  d.reason = reason;
  return d;
}

RouteDecision Reject(Status st, RouteReason reason) {
  RouteDecision d;
  d.reject = std::move(st);
  d.reason = reason;
  return d;
}

}  // namespace

RouteDecision Decide(const RouteInput& in, const PolicyConfig& policy,
                     const std::vector<UpstreamView>& ups) {
  // 1. Data class.
  Allowed allow;
  const bool restricted = in.data_class == DataClass::kRestricted;
  if (restricted) {
    allow.central = false;
    allow.peer = policy.restricted_scope == RestrictedScope::kSite;
  }
  auto why = [&](RouteCause cause, RouteFallback fallback = RouteFallback::kNone) {
    return RouteReason{cause, fallback, in.data_class};
  };
  const RouteReason dc = why(RouteCause::kDataClass);
  const std::string cls = DataClassName(in.data_class);

  // 2. Model: aliases and models this node does not serve.
  if (auto a = policy.aliases.find(in.model); a != policy.aliases.end()) {
    const UpstreamView* u = nullptr;
    for (const auto& v : ups) u = v.name == a->second ? &v : u;
    const bool kind_allowed = u && (u->kind == UpstreamKind::kPeer ? allow.peer : allow.central);
    if (!kind_allowed) {
      return Reject(Status(StatusCode::kPermissionDenied,
                           "model '" + in.model + "' is served by " + a->second + ", and " + cls +
                               " data may not leave this " + (allow.peer ? "site" : "node")),
                    dc);
    }
    if (!u->available) {
      return Reject(Status::Unavailable(
                        "model '" + in.model + "' is served by " + a->second +
                        ", which is unavailable (unhealthy, ejected or at its request limit)"),
                    why(RouteCause::kLinkDown));
    }
    return Go({Target::Upstream(u->id)}, why(RouteCause::kModelAlias));
  }
  if (!in.local_serves_model) {
    bool any_peer = false, any_central = false;
    auto peers = allow.peer ? Candidates(ups, UpstreamKind::kPeer, in.model, &any_peer)
                            : std::vector<Target>{};
    auto centrals = allow.central ? Candidates(ups, UpstreamKind::kCentral, in.model, &any_central)
                                  : std::vector<Target>{};
    std::vector<Target> targets = peers;
    targets.insert(targets.end(), centrals.begin(), centrals.end());
    if (!targets.empty()) return Go(targets, why(RouteCause::kModel));
    if (any_peer || any_central) {
      return Reject(Status::Unavailable("model '" + in.model +
                                        "' is only served upstream, and every upstream serving it "
                                        "is unavailable (link down)"),
                    why(RouteCause::kLinkDown));
    }
    // Is it served upstream at all (by a kind this data class may not use)?
    bool exists = false;
    for (const auto& u : ups)
      exists = exists || (u.Serves(in.model) && !u.models.empty() && u.models[0] != "*");
    if (exists) {
      return Reject(Status(StatusCode::kPermissionDenied,
                           "model '" + in.model + "' is only served upstream, and " + cls +
                               " data may not leave this " + (allow.peer ? "site" : "node")),
                    dc);
    }
    return Reject(
        Status::NotFound("the model '" + in.model + "' does not exist here or upstream", "model"),
        why(RouteCause::kModel));
  }

  // 3. Difficulty: send up to central.
  std::optional<RouteCause> up;
  if (in.tier == Tier::kCentral)
    up = RouteCause::kTier;
  else if (policy.tools_go_central && in.wants_tools)
    up = RouteCause::kTools;
  else if (policy.max_local_prompt_tokens > 0 && in.prompt_tokens > policy.max_local_prompt_tokens)
    up = RouteCause::kPromptTokens;
  else if (policy.max_local_max_tokens > 0 && in.max_tokens > policy.max_local_max_tokens)
    up = RouteCause::kMaxTokens;
  else if (in.local_context > 0 && in.prompt_tokens >= in.local_context)
    up = RouteCause::kPromptTokens;  // no room left here for one answer token
  else if (in.local_context > 0 && in.prompt_tokens + int64_t{in.max_tokens} > in.local_context)
    up = RouteCause::kMaxTokens;
  if (up && in.tier != Tier::kLocal) {
    if (!allow.central) return Go({Target::Local()}, why(*up, RouteFallback::kKeptLocalDataClass));
    bool any = false;
    auto centrals = Candidates(ups, UpstreamKind::kCentral, "", &any);
    if (!centrals.empty()) {
      centrals.push_back(Target::Local());  // refused before the first byte: answer here
      return Go(centrals, why(*up));
    }
    if (any) return Go({Target::Local()}, why(*up, RouteFallback::kLocalFallbackLinkDown));
    return Go({Target::Local()}, why(*up, RouteFallback::kKeptLocalNoCentral));
  }

  // 4. Load.
  const int64_t budget =
      in.latency_budget_ms > 0 ? in.latency_budget_ms : policy.default_latency_budget_ms;
  const bool over_budget = in.local_full || (budget > 0 && in.local_wait_ms > budget);
  if (over_budget) {
    std::vector<Target> targets;
    bool any = false;
    if (allow.peer && policy.overflow_to_peer) {
      auto p = Candidates(ups, UpstreamKind::kPeer, in.model, &any);
      targets.insert(targets.end(), p.begin(), p.end());
    }
    if (allow.central && policy.overflow_to_central) {
      auto c = Candidates(ups, UpstreamKind::kCentral, "", &any);
      targets.insert(targets.end(), c.begin(), c.end());
    }
    if (!in.local_full) targets.push_back(Target::Local());
    if (!targets.empty())
      return Go(targets, why(in.local_full ? RouteCause::kLocalFull : RouteCause::kOverBudget));
    return Reject(Status::ResourceExhausted(
                      "over capacity: the local queue is full and no peer or central may take "
                      "the request (" +
                      cls + " data, upstreams unavailable)"),
                  why(RouteCause::kNoCapacity));
  }
  RouteDecision d = Go({Target::Local()}, restricted ? dc : why(RouteCause::kDefault));
  if (policy.cascade && !in.stream && allow.central && in.tier != Tier::kLocal) {
    bool any = false;
    auto centrals = Candidates(ups, UpstreamKind::kCentral, "", &any);
    if (!centrals.empty()) d.cascade_to = centrals.front().upstream;
  }
  return d;
}

}  // namespace outpost::router

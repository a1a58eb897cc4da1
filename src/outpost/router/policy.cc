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
std::vector<std::string> Candidates(const std::vector<UpstreamView>& ups, UpstreamKind kind,
                                    const std::string& model, bool* any_configured) {
  std::vector<std::string> out;
  for (const auto& u : ups) {
    if (u.kind != kind || !(model.empty() || u.Serves(model))) continue;
    *any_configured = true;
    if (u.available) out.push_back(u.name);
  }
  return out;
}

RouteDecision Go(std::vector<std::string> targets, std::string reason) {
  RouteDecision d;
  d.targets = std::move(targets);
  d.reason = std::move(reason);
  return d;
}

RouteDecision Reject(Status st, std::string reason) {
  RouteDecision d;
  d.reject = std::move(st);
  d.reason = std::move(reason);
  return d;
}

}  // namespace

RouteDecision Decide(const RouteInput& in, const PolicyConfig& policy,
                     const std::vector<UpstreamView>& ups) {
  // 1. Data class.
  Allowed allow;
  const bool restricted = in.data_class == "restricted";
  if (restricted) {
    allow.central = false;
    allow.peer = policy.restricted_scope == "site";
  }
  const std::string dc = "data_class:" + in.data_class;

  // 2. Model: aliases and models this node does not serve.
  if (auto a = policy.aliases.find(in.model); a != policy.aliases.end()) {
    const UpstreamView* u = nullptr;
    for (const auto& v : ups) u = v.name == a->second ? &v : u;
    const bool kind_allowed = u && (u->kind == UpstreamKind::kPeer ? allow.peer : allow.central);
    if (!kind_allowed) {
      return Reject(
          Status(StatusCode::kPermissionDenied,
                 "model '" + in.model + "' is served by " + a->second + ", and " + in.data_class +
                     " data may not leave this " + (allow.peer ? "site" : "node")),
          dc);
    }
    if (!u->available) {
      return Reject(Status::Unavailable(
                        "model '" + in.model + "' is served by " + a->second +
                        ", which is unavailable (unhealthy, ejected or at its request limit)"),
                    "link_down");
    }
    return Go({u->name}, "model:alias");
  }
  if (!in.local_serves_model) {
    bool any_peer = false, any_central = false;
    auto peers = allow.peer ? Candidates(ups, UpstreamKind::kPeer, in.model, &any_peer)
                            : std::vector<std::string>{};
    auto centrals = allow.central ? Candidates(ups, UpstreamKind::kCentral, in.model, &any_central)
                                  : std::vector<std::string>{};
    std::vector<std::string> targets = peers;
    targets.insert(targets.end(), centrals.begin(), centrals.end());
    if (!targets.empty()) return Go(targets, "model");
    if (any_peer || any_central) {
      return Reject(Status::Unavailable("model '" + in.model +
                                        "' is only served upstream, and every upstream serving it "
                                        "is unavailable (link down)"),
                    "link_down");
    }
    // Is it served upstream at all (by a kind this data class may not use)?
    bool exists = false;
    for (const auto& u : ups)
      exists = exists || (u.Serves(in.model) && !u.models.empty() && u.models[0] != "*");
    if (exists) {
      return Reject(
          Status(StatusCode::kPermissionDenied,
                 "model '" + in.model + "' is only served upstream, and " + in.data_class +
                     " data may not leave this " + (allow.peer ? "site" : "node")),
          dc);
    }
    return Reject(
        Status::NotFound("the model '" + in.model + "' does not exist here or upstream", "model"),
        "model");
  }

  // 3. Difficulty: send up to central.
  std::string up_reason;
  if (in.tier == "central")
    up_reason = "difficulty:tier";
  else if (policy.tools_go_central && in.wants_tools)
    up_reason = "difficulty:tools";
  else if (policy.max_local_prompt_tokens > 0 && in.prompt_tokens > policy.max_local_prompt_tokens)
    up_reason = "difficulty:prompt_tokens";
  else if (policy.max_local_max_tokens > 0 && in.max_tokens > policy.max_local_max_tokens)
    up_reason = "difficulty:max_tokens";
  if (!up_reason.empty() && in.tier != "local") {
    if (!allow.central) return Go({"local"}, up_reason + ";" + dc + ";kept_local");
    bool any = false;
    auto centrals = Candidates(ups, UpstreamKind::kCentral, "", &any);
    if (!centrals.empty()) {
      centrals.push_back("local");  // connection refused before the first byte: answer here
      return Go(centrals, up_reason);
    }
    if (any) return Go({"local"}, up_reason + ";link_down;local_fallback");
    return Go({"local"}, up_reason + ";no_central;kept_local");
  }

  // 4. Load.
  const int64_t budget =
      in.latency_budget_ms > 0 ? in.latency_budget_ms : policy.default_latency_budget_ms;
  const bool over_budget = in.local_full || (budget > 0 && in.local_wait_ms > budget);
  if (over_budget) {
    std::vector<std::string> targets;
    bool any = false;
    if (allow.peer && policy.overflow_to_peer) {
      auto p = Candidates(ups, UpstreamKind::kPeer, in.model, &any);
      targets.insert(targets.end(), p.begin(), p.end());
    }
    if (allow.central && policy.overflow_to_central) {
      auto c = Candidates(ups, UpstreamKind::kCentral, "", &any);
      targets.insert(targets.end(), c.begin(), c.end());
    }
    if (!in.local_full) targets.push_back("local");
    if (!targets.empty())
      return Go(targets, in.local_full ? "load:local_full" : "load:over_budget");
    return Reject(Status::ResourceExhausted(
                      "over capacity: the local queue is full and no peer or central may take "
                      "the request (" +
                      in.data_class + " data, upstreams unavailable)"),
                  "load:no_capacity");
  }
  RouteDecision d = Go({"local"}, restricted ? dc : "default");
  if (policy.cascade && !in.stream && allow.central && in.tier != "local") {
    bool any = false;
    auto centrals = Candidates(ups, UpstreamKind::kCentral, "", &any);
    if (!centrals.empty()) d.cascade_to = centrals.front();
  }
  return d;
}

}  // namespace outpost::router

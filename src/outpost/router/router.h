// Router — per-request decision local / peer / central, from the routing
// policy and the live health of the upstreams. Owned by the app; used by HTTP
// workers; internally synchronised (the Cluster is; the config is immutable).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "outpost/router/cluster.h"
#include "outpost/router/policy.h"
#include "outpost/router/router_stats.h"
#include "outpost/router/routing_config.h"
#include "outpost/router/upstream_client_impl.h"
#include "outpost/util/status.h"

namespace outpost::router {

class Router {
 public:
  // Registers the router's stats in `stats`, which must outlive the router.
  Router(RoutingConfig cfg, telemetry::StatRegistry* stats);
  void Start() { cluster_.Start(); }
  void Stop() { cluster_.Stop(); }

  // The request's data class, enforced here only: the tenant's class (by API
  // key) or the policy default; a client header may make it stricter
  // (restricted) but never looser.
  DataClass ResolveDataClass(const std::string& api_key, std::optional<DataClass> header) const;
  // Tenant latency budget for this API key (0 = none).
  int64_t TenantBudgetMs(const std::string& bearer_token) const;
  // Requests share cached prompt prefixes only within one scope: the tenant
  // (by API key; unknown keys share the anonymous scope) and the data class,
  // so a restricted prompt never reuses or leaves KV another class can reach.
  std::string CacheScope(const std::string& bearer_token, DataClass data_class) const;
  // The scope of the requests of the tenant named `tenant_name` in its own
  // data class ("" = requests without a tenant key, in the default class);
  // nullopt when no tenant has that name.
  std::optional<std::string> TenantCacheScope(const std::string& tenant_name) const;

  RouteDecision Decide(const RouteInput& in) const {
    return router::Decide(in, cfg_.policy, cluster_.View());
  }

  // Both live as long as the router; thread-safe.
  Cluster& cluster() { return cluster_; }
  UpstreamClient& client() { return client_; }
  const RoutingConfig& config() const { return cfg_; }
  const RouterStats& stats() const { return stats_; }

 private:
  const RoutingConfig cfg_;
  UpstreamClientImpl client_;  // before cluster_: its health probes use it
  Cluster cluster_;
  const RouterStats stats_;
};

}  // namespace outpost::router

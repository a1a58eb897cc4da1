#include "outpost/router/router.h"

namespace outpost::router {

Router::Router(RoutingConfig cfg, telemetry::StatRegistry* stats)
    : cfg_(std::move(cfg)),
      cluster_(cfg_.upstreams, &util::RealClock(),
               [this](const UpstreamConfig& u) {
                 // Active health check: GET health.path, 2xx within health.timeout.
                 UpstreamReply reply;
                 const Status st = client_.Get(
                     u, u.health.path, std::chrono::milliseconds(u.health.timeout_ms), &reply);
                 return st.ok() && reply.status >= 200 && reply.status < 300;
               }),
      stats_(RouterStats::Register(*stats)) {
  // Far below the relayed requests = pooling works. Counted by the pools,
  // read when a snapshot is taken.
  stats
      ->Register({"outpost_upstream_connections_opened_total",
                  "TCP connections opened to upstreams (relayed requests reuse pooled ones).",
                  telemetry::StatType::kCounter,
                  {},
                  {}})
      .ComputedWith({}, [this] { return static_cast<double>(client_.connections_opened()); });
  // Upstream health as the routing sees it: 1 when a host takes requests, 0
  // while it fails its active health check or is ejected as an outlier.
  auto& up = stats->Register({"outpost_upstream_up",
                              "1 while the upstream is healthy (passes its health check, not "
                              "ejected), else 0.",
                              telemetry::StatType::kGauge,
                              {"upstream", "kind"},
                              {}});
  for (const auto& u : cfg_.upstreams) {
    const std::string name = u.name;
    up.ComputedWith({name, UpstreamKindName(u.kind)}, [this, name] {
      for (const auto& h : cluster_.Status()) {
        if (h.name == name) return h.healthy() ? 1.0 : 0.0;
      }
      return 0.0;
    });
  }
}

DataClass Router::ResolveDataClass(const std::string& api_key,
                                   std::optional<DataClass> header) const {
  DataClass cls = cfg_.policy.default_data_class;
  if (auto t = cfg_.tenants.find(api_key); t != cfg_.tenants.end()) cls = t->second.data_class;
  if (header == DataClass::kRestricted) cls = DataClass::kRestricted;  // stricter only
  return cls;
}

std::string Router::CacheScope(const std::string& bearer, DataClass data_class) const {
  auto t = cfg_.tenants.find(bearer);
  const std::string tenant = t == cfg_.tenants.end() ? std::string() : "tenant:" + t->second.name;
  return tenant + "/" + DataClassName(data_class);
}

std::optional<std::string> Router::TenantCacheScope(const std::string& tenant_name) const {
  if (tenant_name.empty()) {
    return "/" + std::string(DataClassName(cfg_.policy.default_data_class));
  }
  for (const auto& [key, t] : cfg_.tenants) {
    if (t.name == tenant_name) return "tenant:" + t.name + "/" + DataClassName(t.data_class);
  }
  return std::nullopt;
}

int64_t Router::TenantBudgetMs(const std::string& bearer) const {
  auto t = cfg_.tenants.find(bearer);
  return t == cfg_.tenants.end() ? 0 : t->second.latency_budget_ms;
}

}  // namespace outpost::router

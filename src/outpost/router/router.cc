#include "outpost/router/router.h"

namespace outpost::router {

Router::Router(RoutingConfig cfg) : cfg_(std::move(cfg)), cluster_(cfg_.upstreams) {}

StatusOr<std::string> Router::DataClass(const std::string& bearer,
                                        const std::string& header) const {
  if (!header.empty() && header != "public" && header != "internal" && header != "restricted") {
    return Status::InvalidArgument(
        "header X-Data-Class must be public, internal or restricted, got '" + header + "'",
        "X-Data-Class");
  }
  std::string cls = cfg_.policy.default_data_class;
  if (auto t = cfg_.tenants.find(bearer); t != cfg_.tenants.end()) cls = t->second.data_class;
  if (header == "restricted") cls = "restricted";  // stricter only
  return cls;
}

int64_t Router::TenantBudgetMs(const std::string& bearer) const {
  auto t = cfg_.tenants.find(bearer);
  return t == cfg_.tenants.end() ? 0 : t->second.latency_budget_ms;
}

}  // namespace outpost::router

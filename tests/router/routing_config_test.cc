#include "outpost/router/routing_config.h"

#include "outpost/router/router.h"
#include "outpost/telemetry/stat_registry.h"

#include "mocks/temp_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace outpost::router {
namespace {

std::string Write(const std::string& text) {
  return outpost::testing::TempFile(text);
}

TEST(RoutingConfig, FullExample) {
  auto c = LoadRoutingConfig(Write(R"(
upstreams:
  - name: box-b
    kind: peer
    url: http://10.0.0.2:8080/
    models: [gemma-3-270m-q4_k_m]
    health_check: {interval: 250ms, timeout: 200ms, unhealthy_threshold: 2, healthy_threshold: 1}
  - name: hq
    kind: central
    url: https://llm.example.com
    api_key: sk-123
    models: [big-70b]
    first_byte_timeout: 10s
    max_requests: 8
    outlier_detection: {consecutive_failures: 5, base_ejection_time: 2s, max_ejection_time: 1m}
tenants:
  - {name: ward-3, api_key: key-ward3, data_class: restricted, latency_budget: 2s}
  - {name: lab, api_key: key-lab, telemetry_content: true}
policy:
  restricted_scope: site
  aliases: {large: hq}
  max_local_prompt_tokens: 2000
  latency_budget: 1500ms
  confidence_cascade: {min_mean_logprob: -1.5}
)"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->upstreams.size(), 2u);
  EXPECT_EQ(c->upstreams[0].base_url, "http://10.0.0.2:8080");
  EXPECT_EQ(c->upstreams[0].kind, UpstreamKind::kPeer);
  EXPECT_EQ(c->upstreams[0].health.interval_ms, 250);
  EXPECT_EQ(c->upstreams[1].first_byte_timeout_ms, 10000);
  EXPECT_EQ(c->upstreams[1].outlier.max_ejection_ms, 60000);
  EXPECT_EQ(c->tenants.at("key-ward3").data_class, DataClass::kRestricted);
  EXPECT_FALSE(c->tenants.at("key-ward3").telemetry_content);  // off unless set
  EXPECT_TRUE(c->tenants.at("key-lab").telemetry_content);
  EXPECT_EQ(c->policy.restricted_scope, RestrictedScope::kSite);
  EXPECT_EQ(c->policy.aliases.at("large"), "hq");
  EXPECT_EQ(c->policy.default_latency_budget_ms, 1500);
  EXPECT_TRUE(c->policy.cascade);
  EXPECT_DOUBLE_EQ(c->policy.cascade_min_mean_logprob, -1.5);
}

struct Bad {
  const char* yaml;
  const char* part;
};
void PrintTo(const Bad& b, std::ostream* os) {
  *os << b.yaml;
}
class BadRouting : public ::testing::TestWithParam<Bad> {};

TEST_P(BadRouting, NamesTheProblem) {
  auto c = LoadRoutingConfig(Write(GetParam().yaml));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find(GetParam().part), std::string::npos) << c.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    Table, BadRouting,
    ::testing::Values(
        Bad{"upstreams: 5\n", "'upstreams' must be a list"},
        Bad{"upstreams:\n  - {name: a, kind: cloud, url: http://x}\n",
            "'kind' must be peer or central"},
        Bad{"upstreams:\n  - {name: a, url: ftp://x}\n", "must start with http://"},
        Bad{"upstreams:\n  - {name: a, url: 'http:///v1'}\n", "'url' has no host"},
        Bad{"upstreams:\n  - {url: http://x}\n", "'name' is required"},
        Bad{"upstreams:\n  - {name: a, url: http://x}\n  - {name: a, url: http://y}\n",
            "used twice"},
        Bad{"upstreams:\n  - {name: a, url: http://x, colour: red}\n", "unknown key 'colour'"},
        Bad{"upstreams:\n  - {name: a, url: http://x, first_byte_timeout: soon}\n",
            "not a duration"},
        Bad{"upstreams:\n  - {name: a, url: http://x, max_requests: 0}\n", "at least 1"},
        Bad{"policy: {restricted_scope: planet}\n", "node or site"},
        Bad{"policy: {default_data_class: secret}\n", "public, internal or restricted"},
        Bad{"tenants:\n  - {api_key: k, data_class: restrictd}\n",
            "public, internal or restricted"},
        Bad{"policy: {aliases: {large: nowhere}}\n", "unknown upstream 'nowhere'"},
        Bad{"tenants:\n  - {name: t}\n", "'api_key' is required"},
        Bad{"tenants:\n  - {api_key: k, telemetry_content: sometimes}\n",
            "'telemetry_content' must be true or false"},
        Bad{"upstreams:\n  - {name: a, url: https://x, tls: {ca_file: /nonexistent/ca.pem}}\n",
            "'tls.ca_file' /nonexistent/ca.pem is not a readable file"},
        Bad{"upstreams:\n  - {name: a, url: https://x, tls: {verify: maybe}}\n", "tls.verify"},
        Bad{"upstreams:\n  - {name: a, url: https://x, tls: {pin: abc}}\n",
            "unknown key 'tls.pin'"},
        Bad{"routes: []\n", "unknown key 'routes'"}, Bad{"upstreams: [\n", "YAML syntax error"}));

TEST(RoutingConfig, PathInTheUrlIsAPrefix) {
  auto c = LoadRoutingConfig(Write(R"(
upstreams:
  - {name: gw, url: "http://gw.site.local:8000/llm/"}
  - {name: plain, url: "https://api.example.com"}
)"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->upstreams[0].base_url, "http://gw.site.local:8000");
  EXPECT_EQ(c->upstreams[0].path_prefix, "/llm");
  EXPECT_EQ(c->upstreams[1].base_url, "https://api.example.com");
  EXPECT_EQ(c->upstreams[1].path_prefix, "");
}

TEST(RoutingConfig, MissingFile) {
  EXPECT_EQ(LoadRoutingConfig("/nonexistent/routing.yaml").status().code(), StatusCode::kNotFound);
}

// Cached prompt prefixes are shared per tenant and data class.
TEST(Router, CacheScopeSeparatesTenantsAndDataClasses) {
  RoutingConfig cfg;
  cfg.tenants["key-ward3"] = TenantConfig{"ward-3", DataClass::kRestricted, 0};
  cfg.tenants["key-office"] = TenantConfig{"office", DataClass::kInternal, 0};
  telemetry::StatRegistry stats;
  Router r(cfg, &stats);
  EXPECT_EQ(r.CacheScope("key-ward3", DataClass::kRestricted), "tenant:ward-3/restricted");
  EXPECT_NE(r.CacheScope("key-ward3", DataClass::kRestricted),
            r.CacheScope("key-office", DataClass::kRestricted));
  EXPECT_NE(r.CacheScope("key-office", DataClass::kInternal),
            r.CacheScope("key-office", DataClass::kRestricted));
  // Unknown keys (and none) share the anonymous scope of their class.
  EXPECT_EQ(r.CacheScope("", DataClass::kInternal), r.CacheScope("nobody", DataClass::kInternal));
}

}  // namespace
}  // namespace outpost::router

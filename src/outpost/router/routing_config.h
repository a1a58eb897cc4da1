// RoutingConfig — upstreams (peer Outposts and central models), tenants and the
// routing policy, read from the YAML file named by `routing_file`.
//
// Vocabulary follows Envoy: an upstream is a cluster of one host with an
// active health check, outlier detection (consecutive failures eject the host
// for a backoff that grows) and a circuit breaker (max concurrent requests).
// Validated once into an immutable value; errors name the key.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "outpost/router/route_types.h"
#include "outpost/util/status.h"

namespace outpost::router {

struct HealthCheckConfig {
  std::string path = "/health";  // GET; 2xx = healthy
  int64_t interval_ms = 250;
  int64_t timeout_ms = 500;
  int32_t healthy_threshold = 1;    // consecutive successes to turn healthy
  int32_t unhealthy_threshold = 2;  // consecutive failures to turn unhealthy
};

struct OutlierConfig {
  int32_t consecutive_failures = 3;  // request failures that eject the host
  int64_t base_ejection_ms = 1000;   // first ejection; doubles each time, up to max
  int64_t max_ejection_ms = 30000;
};

struct UpstreamConfig {
  std::string name;
  UpstreamKind kind = UpstreamKind::kCentral;
  std::string base_url;             // "http://10.0.0.2:8080": scheme, host, port only
  std::string path_prefix;          // from a url with a path, "http://gw/llm" → "/llm";
                                    // requests go to {path_prefix}/v1/...
  std::string api_key;              // sent as Authorization: Bearer
  std::vector<std::string> models;  // model ids it serves; "*" = any
  int64_t connect_timeout_ms = 1000;
  int64_t first_byte_timeout_ms = 30000;
  int64_t total_timeout_ms = 300000;
  bool tls_verify = true;
  std::string tls_ca_file;
  int32_t max_requests = 64;  // circuit breaker
  HealthCheckConfig health;
  OutlierConfig outlier;
};

struct TenantConfig {
  std::string name;
  DataClass data_class = DataClass::kInternal;
  int64_t latency_budget_ms = 0;  // 0 = none
  // Prompts and answers of this tenant may leave through the uplink (as
  // OpenTelemetry GenAI content events). Off: telemetry never carries content.
  bool telemetry_content = false;
};

struct PolicyConfig {
  // "node": restricted data never leaves this node. "site": it may go to a
  // peer, never to central.
  RestrictedScope restricted_scope = RestrictedScope::kNode;
  DataClass default_data_class = DataClass::kInternal;
  // Model aliases served by central ("large" → upstream "central").
  std::map<std::string, std::string> aliases;
  // Difficulty rules that send a request up to central (0 = off).
  int32_t max_local_prompt_tokens = 0;
  int32_t max_local_max_tokens = 0;
  bool tools_go_central = true;  // tools or JSON-schema output requested
  // Load: try peer/central when local queueing would exceed the budget.
  bool overflow_to_peer = true;
  bool overflow_to_central = true;
  int64_t default_latency_budget_ms = 0;  // 0 = no budget (queue locally)
  // Confidence cascade (non-streaming only): answer locally, and if the answer's
  // mean token log-probability is below the threshold, ask central and return
  // its answer instead. Off unless set.
  bool cascade = false;
  double cascade_min_mean_logprob = -1.0;
};

struct RoutingConfig {
  std::vector<UpstreamConfig> upstreams;
  std::map<std::string, TenantConfig> tenants;  // by API key
  PolicyConfig policy;
};

// Errors: NotFound (no file), InvalidArgument naming the key and entry.
StatusOr<RoutingConfig> LoadRoutingConfig(const std::string& path);

}  // namespace outpost::router

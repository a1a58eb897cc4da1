// The routing vocabulary shared by the policy, the dispatcher and api/: data
// classes, tiers, targets and reasons as types, not strings. Names render only
// at the edges (headers, metrics, config files). Pure value types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "outpost/util/status.h"

namespace outpost::router {

// How sensitive a request's data is. Only ever made stricter by a client.
enum class DataClass { kPublic, kInternal, kRestricted };
const char* DataClassName(DataClass c);  // "public", "internal", "restricted"
std::optional<DataClass> ParseDataClass(std::string_view name);

// Where restricted data may go: this node only, or also its site's peers.
enum class RestrictedScope { kNode, kSite };
const char* RestrictedScopeName(RestrictedScope s);
std::optional<RestrictedScope> ParseRestrictedScope(std::string_view name);

// The client's tier request (X-Outpost-Tier).
enum class Tier { kAny, kLocal, kCentral };
std::optional<Tier> ParseTier(std::string_view name);  // "", "local", "central"

enum class UpstreamKind { kPeer, kCentral };
const char* UpstreamKindName(UpstreamKind k);  // "peer", "central"

// Index of an upstream in the routing config (and the cluster), stable for
// the process's life.
using UpstreamId = int32_t;

// Where to try a request: this node, or one upstream.
struct Target {
  static Target Local() { return Target{}; }
  static Target Upstream(UpstreamId id) { return Target{id}; }
  bool local() const { return upstream < 0; }
  bool operator==(const Target&) const = default;
  UpstreamId upstream = -1;
};

// Why a route was chosen. cause is the rule that decided; fallback says what
// was done instead when that rule's preferred target could not be used.
enum class RouteCause {
  kDefault,               // nothing special: local
  kForwarded,             // another Outpost forwarded it: answered here
  kLocalOnly,             // its endpoint is answered here only (/infill)
  kDataClass,             // the data class kept it here
  kModel,                 // the model is only served upstream
  kModelAlias,            // an alias names an upstream
  kLinkDown,              // every upstream that could take it is unavailable
  kTier,                  // difficulty: X-Outpost-Tier: central
  kTools,                 // difficulty: tools or JSON-schema output
  kPromptTokens,          // difficulty: prompt longer than the local limit
  kMaxTokens,             // difficulty: max_tokens above the local limit
  kLocalFull,             // load: the local queue is full
  kOverBudget,            // load: the local wait exceeds the latency budget
  kNoCapacity,            // load: full here and nowhere else allowed
  kCascadeLowConfidence,  // cascade: the local answer was unsure, central asked
  kCascadeCentralFailed,  // cascade: central failed, the local answer stands
};
enum class RouteFallback {
  kNone,
  kKeptLocalDataClass,     // the data class forbids central
  kLocalFallbackLinkDown,  // central is configured but unavailable
  kKeptLocalNoCentral,     // no central is configured
  kUpstreamsFailed,        // every upstream target failed before its first byte
};
struct RouteReason {
  RouteCause cause = RouteCause::kDefault;
  RouteFallback fallback = RouteFallback::kNone;
  DataClass data_class = DataClass::kInternal;  // named by kDataClass reasons
  // "default", "data_class:restricted", "difficulty:tier;link_down;local_fallback", ...
  // (the X-Outpost-Route-Reason header and the metrics label).
  std::string ToString() const;
};

}  // namespace outpost::router

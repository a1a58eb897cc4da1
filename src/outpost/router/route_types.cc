#include "outpost/router/route_types.h"

namespace outpost::router {

const char* DataClassName(DataClass c) {
  switch (c) {
    case DataClass::kPublic:
      return "public";
    case DataClass::kInternal:
      return "internal";
    case DataClass::kRestricted:
      return "restricted";
  }
  return "internal";
}

std::optional<DataClass> ParseDataClass(std::string_view name) {
  if (name == "public") return DataClass::kPublic;
  if (name == "internal") return DataClass::kInternal;
  if (name == "restricted") return DataClass::kRestricted;
  return std::nullopt;
}

const char* RestrictedScopeName(RestrictedScope s) {
  return s == RestrictedScope::kSite ? "site" : "node";
}

std::optional<RestrictedScope> ParseRestrictedScope(std::string_view name) {
  if (name == "node") return RestrictedScope::kNode;
  if (name == "site") return RestrictedScope::kSite;
  return std::nullopt;
}

std::optional<Tier> ParseTier(std::string_view name) {
  if (name.empty()) return Tier::kAny;
  if (name == "local") return Tier::kLocal;
  if (name == "central") return Tier::kCentral;
  return std::nullopt;
}

const char* UpstreamKindName(UpstreamKind k) {
  return k == UpstreamKind::kPeer ? "peer" : "central";
}

std::string RouteReason::ToString() const {
  std::string s;
  switch (cause) {
    case RouteCause::kDefault:
      s = "default";
      break;
    case RouteCause::kForwarded:
      s = "forwarded";
      break;
    case RouteCause::kLocalOnly:
      s = "local_only";
      break;
    case RouteCause::kDataClass:
      s = std::string("data_class:") + DataClassName(data_class);
      break;
    case RouteCause::kModel:
      s = "model";
      break;
    case RouteCause::kModelAlias:
      s = "model:alias";
      break;
    case RouteCause::kLinkDown:
      s = "link_down";
      break;
    case RouteCause::kTier:
      s = "difficulty:tier";
      break;
    case RouteCause::kTools:
      s = "difficulty:tools";
      break;
    case RouteCause::kPromptTokens:
      s = "difficulty:prompt_tokens";
      break;
    case RouteCause::kMaxTokens:
      s = "difficulty:max_tokens";
      break;
    case RouteCause::kLocalFull:
      s = "load:local_full";
      break;
    case RouteCause::kOverBudget:
      s = "load:over_budget";
      break;
    case RouteCause::kNoCapacity:
      s = "load:no_capacity";
      break;
    case RouteCause::kCascadeLowConfidence:
      s = "cascade:low_confidence";
      break;
    case RouteCause::kCascadeCentralFailed:
      s = "cascade:central_failed;local_answer";
      break;
  }
  switch (fallback) {
    case RouteFallback::kNone:
      break;
    case RouteFallback::kKeptLocalDataClass:
      s += std::string(";data_class:") + DataClassName(data_class) + ";kept_local";
      break;
    case RouteFallback::kLocalFallbackLinkDown:
      s += ";link_down;local_fallback";
      break;
    case RouteFallback::kKeptLocalNoCentral:
      s += ";no_central;kept_local";
      break;
    case RouteFallback::kUpstreamsFailed:
      s += ";upstreams_failed";
      break;
  }
  return s;
}

}  // namespace outpost::router

#include "outpost/router/routing_config.h"

#include "outpost/util/status_macros.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <set>

#include "outpost/util/units.h"
#include "outpost/util/yaml_file.h"

namespace outpost::router {
namespace {

Status Bad(const std::string& where, const std::string& what, const std::string& key) {
  return Status::InvalidArgument(where + ": " + what, key);
}

StatusOr<int64_t> Ms(const YAML::Node& n, const std::string& where, const std::string& key) {
  auto v = util::ParseDurationMs(n.as<std::string>());
  if (!v.ok()) return Bad(where, "'" + key + "': " + v.status().message(), key);
  return *v;
}

StatusOr<int64_t> Int(const YAML::Node& n, const std::string& where, const std::string& key,
                      int64_t lo) {
  try {
    const int64_t v = n.as<int64_t>();
    if (v < lo) return Bad(where, "'" + key + "' must be at least " + std::to_string(lo), key);
    return v;
  } catch (const YAML::Exception&) {
    return Bad(where, "'" + key + "' must be an integer, got '" + n.as<std::string>() + "'", key);
  }
}

StatusOr<bool> Bool(const YAML::Node& n, const std::string& where, const std::string& key) {
  try {
    return n.as<bool>();
  } catch (const YAML::Exception&) {
    return Bad(where, "'" + key + "' must be true or false", key);
  }
}

Status ParseUpstream(const YAML::Node& n, const std::string& where, UpstreamConfig* u) {
  if (!n.IsMap()) return Bad(where, "must be a mapping", "upstreams");
  for (const auto& kv : n) {
    const std::string k = kv.first.as<std::string>();
    const YAML::Node& v = kv.second;
    if (k == "name")
      u->name = v.as<std::string>();
    else if (k == "kind") {
      const std::string s = v.as<std::string>();
      if (s == "peer")
        u->kind = UpstreamKind::kPeer;
      else if (s == "central")
        u->kind = UpstreamKind::kCentral;
      else
        return Bad(where, "'kind' must be peer or central, got '" + s + "'", "kind");
    } else if (k == "url")
      u->base_url = v.as<std::string>();
    else if (k == "api_key")
      u->api_key = v.as<std::string>();
    else if (k == "models") {
      if (!v.IsSequence()) return Bad(where, "'models' must be a list", "models");
      for (const auto& m : v) u->models.push_back(m.as<std::string>());
    } else if (k == "connect_timeout")
      OUTPOST_ASSIGN_OR_RETURN(u->connect_timeout_ms, Ms(v, where, k));
    else if (k == "first_byte_timeout")
      OUTPOST_ASSIGN_OR_RETURN(u->first_byte_timeout_ms, Ms(v, where, k));
    else if (k == "total_timeout")
      OUTPOST_ASSIGN_OR_RETURN(u->total_timeout_ms, Ms(v, where, k));
    else if (k == "max_requests")
      OUTPOST_ASSIGN_OR_RETURN(u->max_requests, Int(v, where, k, 1));
    else if (k == "tls") {
      for (const auto& t : v) {
        const std::string tk = t.first.as<std::string>();
        if (tk == "verify")
          OUTPOST_ASSIGN_OR_RETURN(u->tls_verify, Bool(t.second, where, "tls.verify"));
        else if (tk == "ca_file") {
          u->tls_ca_file = t.second.as<std::string>();
          std::error_code ec;
          if (!u->tls_ca_file.empty() && !std::filesystem::is_regular_file(u->tls_ca_file, ec)) {
            return Bad(where, "'tls.ca_file' " + u->tls_ca_file + " is not a readable file",
                       "tls.ca_file");
          }
        } else
          return Bad(where, "unknown key 'tls." + tk + "'", "tls." + tk);
      }
    } else if (k == "health_check") {
      for (const auto& h : v) {
        const std::string hk = h.first.as<std::string>();
        if (hk == "path")
          u->health.path = h.second.as<std::string>();
        else if (hk == "interval")
          OUTPOST_ASSIGN_OR_RETURN(u->health.interval_ms, Ms(h.second, where, hk));
        else if (hk == "timeout")
          OUTPOST_ASSIGN_OR_RETURN(u->health.timeout_ms, Ms(h.second, where, hk));
        else if (hk == "healthy_threshold")
          OUTPOST_ASSIGN_OR_RETURN(u->health.healthy_threshold, Int(h.second, where, hk, 1));
        else if (hk == "unhealthy_threshold")
          OUTPOST_ASSIGN_OR_RETURN(u->health.unhealthy_threshold, Int(h.second, where, hk, 1));
        else
          return Bad(where, "unknown key 'health_check." + hk + "'", "health_check." + hk);
      }
    } else if (k == "outlier_detection") {
      for (const auto& o : v) {
        const std::string ok = o.first.as<std::string>();
        if (ok == "consecutive_failures")
          OUTPOST_ASSIGN_OR_RETURN(u->outlier.consecutive_failures, Int(o.second, where, ok, 1));
        else if (ok == "base_ejection_time")
          OUTPOST_ASSIGN_OR_RETURN(u->outlier.base_ejection_ms, Ms(o.second, where, ok));
        else if (ok == "max_ejection_time")
          OUTPOST_ASSIGN_OR_RETURN(u->outlier.max_ejection_ms, Ms(o.second, where, ok));
        else
          return Bad(where, "unknown key 'outlier_detection." + ok + "'",
                     "outlier_detection." + ok);
      }
    } else {
      return Bad(where, "unknown key '" + k + "'", k);
    }
  }
  if (u->name.empty()) return Bad(where, "'name' is required", "name");
  if (u->base_url.rfind("http://", 0) != 0 && u->base_url.rfind("https://", 0) != 0) {
    return Bad(where + " (" + u->name + ")",
               "'url' must start with http:// or https://, got '" + u->base_url + "'", "url");
  }
  while (!u->base_url.empty() && u->base_url.back() == '/') u->base_url.pop_back();
  // A path in the url is a prefix for every request path ("http://gw/llm" →
  // POST /llm/v1/chat/completions, GET /llm/health).
  const size_t path = u->base_url.find('/', u->base_url.find("://") + 3);
  if (path != std::string::npos) {
    u->path_prefix = u->base_url.substr(path);
    u->base_url.resize(path);
  }
  if (u->base_url.size() <= u->base_url.find("://") + 3) {
    return Bad(where + " (" + u->name + ")", "'url' has no host: '" + u->base_url + "'", "url");
  }
  if (u->models.empty()) u->models.push_back("*");
  return Status::Ok();
}

}  // namespace

namespace {

// A data class value from YAML. Unknown names are errors: a typo must never
// make data less protected than the operator meant.
Status ParseDataClassValue(const YAML::Node& v, const std::string& where, const std::string& key,
                           DataClass* out) {
  const std::string name = v.as<std::string>();
  auto c = ParseDataClass(name);
  if (!c)
    return Bad(where, "'" + key + "' must be public, internal or restricted, got '" + name + "'",
               key);
  *out = *c;
  return Status::Ok();
}

}  // namespace

StatusOr<RoutingConfig> LoadRoutingConfig(const std::string& path) {
  auto loaded = LoadYamlFile(path, "routing", "routing_file");
  if (!loaded.ok()) return loaded.status();
  const YAML::Node root = *loaded;
  RoutingConfig cfg;
  if (root.IsNull()) return cfg;
  if (!root.IsMap())
    return Status::InvalidArgument(path + ": the top level must be a mapping", "routing_file");
  try {
    std::set<std::string> names;
    for (const auto& top : root) {
      const std::string key = top.first.as<std::string>();
      const YAML::Node& v = top.second;
      if (key == "upstreams") {
        if (!v.IsSequence()) return Bad(path, "'upstreams' must be a list", "upstreams");
        for (size_t i = 0; i < v.size(); ++i) {
          UpstreamConfig u;
          Status st = ParseUpstream(v[i], path + " upstreams[" + std::to_string(i) + "]", &u);
          if (!st.ok()) return st;
          if (!names.insert(u.name).second)
            return Bad(path, "upstream name '" + u.name + "' is used twice", "name");
          cfg.upstreams.push_back(std::move(u));
        }
      } else if (key == "tenants") {
        if (!v.IsSequence()) return Bad(path, "'tenants' must be a list", "tenants");
        for (size_t i = 0; i < v.size(); ++i) {
          const std::string where = path + " tenants[" + std::to_string(i) + "]";
          TenantConfig t;
          std::string api_key;
          for (const auto& kv : v[i]) {
            const std::string k = kv.first.as<std::string>();
            if (k == "name")
              t.name = kv.second.as<std::string>();
            else if (k == "api_key")
              api_key = kv.second.as<std::string>();
            else if (k == "data_class") {
              Status st = ParseDataClassValue(kv.second, where, k, &t.data_class);
              if (!st.ok()) return st;
            } else if (k == "latency_budget")
              OUTPOST_ASSIGN_OR_RETURN(t.latency_budget_ms, Ms(kv.second, where, k));
            else if (k == "telemetry_content")
              OUTPOST_ASSIGN_OR_RETURN(t.telemetry_content, Bool(kv.second, where, k));
            else
              return Bad(where, "unknown key '" + k + "'", k);
          }
          if (api_key.empty()) return Bad(where, "'api_key' is required", "api_key");
          cfg.tenants[api_key] = t;
        }
      } else if (key == "policy") {
        const std::string where = path + " policy";
        auto& p = cfg.policy;
        for (const auto& kv : v) {
          const std::string k = kv.first.as<std::string>();
          const YAML::Node& pv = kv.second;
          if (k == "restricted_scope") {
            const std::string name = pv.as<std::string>();
            auto scope = ParseRestrictedScope(name);
            if (!scope) {
              return Bad(where, "'restricted_scope' must be node or site, got '" + name + "'", k);
            }
            p.restricted_scope = *scope;
          } else if (k == "default_data_class") {
            Status st = ParseDataClassValue(pv, where, k, &p.default_data_class);
            if (!st.ok()) return st;
          } else if (k == "aliases") {
            for (const auto& a : pv)
              p.aliases[a.first.as<std::string>()] = a.second.as<std::string>();
          } else if (k == "max_local_prompt_tokens")
            OUTPOST_ASSIGN_OR_RETURN(p.max_local_prompt_tokens, Int(pv, where, k, 0));
          else if (k == "max_local_max_tokens")
            OUTPOST_ASSIGN_OR_RETURN(p.max_local_max_tokens, Int(pv, where, k, 0));
          else if (k == "tools_go_central")
            OUTPOST_ASSIGN_OR_RETURN(p.tools_go_central, Bool(pv, where, k));
          else if (k == "overflow_to_peer")
            OUTPOST_ASSIGN_OR_RETURN(p.overflow_to_peer, Bool(pv, where, k));
          else if (k == "overflow_to_central")
            OUTPOST_ASSIGN_OR_RETURN(p.overflow_to_central, Bool(pv, where, k));
          else if (k == "latency_budget")
            OUTPOST_ASSIGN_OR_RETURN(p.default_latency_budget_ms, Ms(pv, where, k));
          else if (k == "confidence_cascade") {
            p.cascade = true;
            for (const auto& c : pv) {
              const std::string ck = c.first.as<std::string>();
              if (ck != "min_mean_logprob")
                return Bad(where, "unknown key 'confidence_cascade." + ck + "'", ck);
              try {
                p.cascade_min_mean_logprob = c.second.as<double>();
              } catch (const YAML::Exception&) {
                return Bad(where, "'confidence_cascade.min_mean_logprob' must be a number", ck);
              }
              if (p.cascade_min_mean_logprob > 0) {
                return Bad(where,
                           "'confidence_cascade.min_mean_logprob' must be <= 0 (a log-probability)",
                           ck);
              }
            }
          } else
            return Bad(where, "unknown key '" + k + "'", k);
        }
      } else {
        return Bad(path, "unknown key '" + key + "' (use upstreams, tenants, policy)", key);
      }
    }
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(path + ": " + e.what(), "routing_file");
  }
  for (const auto& [alias, target] : cfg.policy.aliases) {
    bool found = false;
    for (const auto& u : cfg.upstreams) found = found || u.name == target;
    if (!found)
      return Bad(path, "alias '" + alias + "' names unknown upstream '" + target + "'", "aliases");
  }
  return cfg;
}

}  // namespace outpost::router

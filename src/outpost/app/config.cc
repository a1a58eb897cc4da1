#include "outpost/app/config.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>

#include "outpost/fleet/desired_state.h"
#include "outpost/models/model_signature.h"
#include "outpost/util/daily_window.h"
#include "outpost/util/units.h"
#include "outpost/util/yaml_file.h"

namespace outpost::app {
namespace {

using Setter = std::function<Status(ServeConfig*, const std::string&, const std::string&)>;

Status ParseInt(const std::string& key, const std::string& v, long lo, long hi, long* out) {
  errno = 0;
  char* end = nullptr;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno == ERANGE) {
    return Status::InvalidArgument("'" + key + "' must be an integer, got '" + v + "'", key);
  }
  if (n < lo || n > hi) {
    return Status::InvalidArgument("'" + key + "' must be between " + std::to_string(lo) + " and " +
                                       std::to_string(hi) + ", got " + v,
                                   key);
  }
  *out = n;
  return Status::Ok();
}

template <typename T>
Setter IntField(T ServeConfig::*field, long lo, long hi) {
  return [field, lo, hi](ServeConfig* c, const std::string& k, const std::string& v) {
    long n = 0;
    Status st = ParseInt(k, v, lo, hi, &n);
    if (st.ok()) c->*field = static_cast<T>(n);
    return st;
  };
}

Setter StringField(std::string ServeConfig::*field, std::vector<std::string> allowed = {}) {
  return [field, allowed](ServeConfig* c, const std::string& k, const std::string& v) {
    if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), v) == allowed.end()) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      return Status::InvalidArgument("'" + k + "' must be one of " + list + ", got '" + v + "'", k);
    }
    c->*field = v;
    return Status::Ok();
  };
}

Setter BytesField(uint64_t ServeConfig::*field, bool allow_auto) {
  return [field, allow_auto](ServeConfig* c, const std::string& k, const std::string& v) {
    if (allow_auto && v == "auto") {
      c->*field = 0;
      return Status::Ok();
    }
    auto b = util::ParseBytes(v);
    if (!b.ok()) return Status::InvalidArgument("'" + k + "': " + b.status().message(), k);
    if (*b == 0) return Status::InvalidArgument("'" + k + "' must be greater than 0", k);
    c->*field = *b;
    return Status::Ok();
  };
}

// Any duration ("0", "250ms", "30s", "5m"), in milliseconds, at most max_ms.
Setter DurationField(int64_t ServeConfig::*field, int64_t max_ms = INT64_MAX) {
  return [field, max_ms](ServeConfig* c, const std::string& k, const std::string& v) {
    auto ms = util::ParseDurationMs(v);
    if (!ms.ok()) return Status::InvalidArgument("'" + k + "': " + ms.status().message(), k);
    if (*ms > max_ms) {
      return Status::InvalidArgument(
          "'" + k + "' must be at most " + std::to_string(max_ms) + "ms, got '" + v + "'", k);
    }
    c->*field = *ms;
    return Status::Ok();
  };
}

// A duration of at least 100ms ("10s", "250ms", "5m"), in milliseconds.
Setter TimeoutField(int64_t ServeConfig::*field) {
  return [field](ServeConfig* c, const std::string& k, const std::string& v) {
    auto ms = util::ParseDurationMs(v);
    if (!ms.ok()) return Status::InvalidArgument("'" + k + "': " + ms.status().message(), k);
    if (*ms < 100 || *ms > 7 * 24 * 3600 * 1000LL) {
      return Status::InvalidArgument(
          "'" + k + "' must be between 100ms and 7 days, got '" + v + "'", k);
    }
    c->*field = *ms;
    return Status::Ok();
  };
}

Setter BoolField(bool ServeConfig::*field) {
  return [field](ServeConfig* c, const std::string& k, const std::string& v) {
    if (v != "true" && v != "false")
      return Status::InvalidArgument("'" + k + "' must be true or false, got '" + v + "'", k);
    c->*field = v == "true";
    return Status::Ok();
  };
}

// A sampling default: a number in [lo, hi] stored in cfg->sampling.*field.
template <typename T>
Setter SamplingField(std::optional<T> engine::SamplingParams::*field, double lo, double hi) {
  return [field, lo, hi](ServeConfig* c, const std::string& k, const std::string& v) {
    char* end = nullptr;
    const double d = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !(d >= lo && d <= hi)) {
      char range[64];
      std::snprintf(range, sizeof range, "%g and %g", lo, hi);
      return Status::InvalidArgument(
          "'" + k + "' must be a number between " + range + ", got '" + v + "'", k);
    }
    c->sampling.*field = static_cast<T>(d);
    return Status::Ok();
  };
}

const std::map<std::string, Setter>& Setters() {
  static const auto*
      m =
          new std::
              map<std::string, Setter>{
                  {"model", StringField(&ServeConfig::model)},
                  {"model_id", StringField(&ServeConfig::model_id)},
                  {"routing_file", StringField(&ServeConfig::routing_file)},
                  {"chat_template_file", StringField(&ServeConfig::chat_template_file)},
                  {"host", StringField(&ServeConfig::host)},
                  {"port", IntField(&ServeConfig::port, 0, 65535)},
                  {"threads", IntField(&ServeConfig::threads, 0, 1024)},
                  {"threads_batch", IntField(&ServeConfig::threads_batch, 0, 1024)},
                  {"ctx_size", IntField(&ServeConfig::ctx_size, 16, 1 << 22)},
                  {"parallel",
                   [](ServeConfig* c, const std::string& k, const std::string& v) {
                     if (v == "auto") {
                       c->parallel = 0;
                       return Status::Ok();
                     }
                     long n = 0;
                     Status st = ParseInt(k, v, 1, 4096, &n);
                     if (!st.ok())
                       return Status::InvalidArgument(
                           "'parallel' must be 'auto' or an integer from 1 to 4096, got '" + v +
                               "'",
                           k);
                     c->parallel = static_cast<int>(n);
                     return Status::Ok();
                   }},
                  {"parallel_auto_max", IntField(&ServeConfig::parallel_auto_max, 1, 4096)},
                  {"memory_budget", BytesField(&ServeConfig::memory_budget, /*allow_auto=*/true)},
                  {"headroom",
                   [](ServeConfig* c, const std::string& k, const std::string& v) {
                     std::string t = v;
                     bool percent = !t.empty() && t.back() == '%';
                     if (percent) t.pop_back();
                     char* end = nullptr;
                     double d = std::strtod(t.c_str(), &end);
                     if (t.empty() || *end != '\0') {
                       return Status::InvalidArgument(
                           "'headroom' must be a fraction (0.2) or a percentage (20%), got '" + v +
                               "'",
                           k);
                     }
                     if (percent) d /= 100.0;
                     if (d < 0.0 || d > 4.0)
                       return Status::InvalidArgument(
                           "'headroom' must be between 0% and 400%, got '" + v + "'", k);
                     c->headroom = d;
                     return Status::Ok();
                   }},
                  {"kv_type", StringField(&ServeConfig::kv_type, {"f16", "q8_0", "q4_0"})},
                  {"reasoning_format",
                   StringField(&ServeConfig::reasoning_format, {"auto", "none"})},
                  {"batch_size", IntField(&ServeConfig::batch_size, 16, 8192)},
                  {"prefill_chunk", IntField(&ServeConfig::prefill_chunk, 1, 8192)},
                  {"prefix_cache", BoolField(&ServeConfig::prefix_cache)},
                  {"step_budget", DurationField(&ServeConfig::step_budget_ms, 60'000)},
                  {"queue_length", IntField(&ServeConfig::queue_length, 0, 100000)},
                  {"queue_wait", DurationField(&ServeConfig::queue_wait_ms)},
                  {"priority_aging", DurationField(&ServeConfig::priority_aging_ms)},
                  {"batch_parallel", IntField(&ServeConfig::batch_parallel, 0, 1024)},
                  {"responses_retention",
                   DurationField(&ServeConfig::responses_retention_ms, 3650LL * 86'400'000)},
                  {"batch_yield", DurationField(&ServeConfig::batch_yield_ms, 3'600'000)},
                  {"batch_busy_tokens", IntField(&ServeConfig::batch_busy_tokens, 1, 8192)},
                  {"speculative_draft", IntField(&ServeConfig::speculative_draft, 0, 16)},
                  {"speculative_max_batch",
                   IntField(&ServeConfig::speculative_max_batch, 1, 1024)},
                  {"max_body_size", BytesField(&ServeConfig::max_body_size, /*allow_auto=*/false)},
                  {"http_threads", IntField(&ServeConfig::http_threads, 4, 4096)},
                  {"http_io_threads", IntField(&ServeConfig::http_io_threads, 1, 64)},
                  {"max_header_size",
                   BytesField(&ServeConfig::max_header_size, /*allow_auto=*/false)},
                  {"header_timeout", TimeoutField(&ServeConfig::header_timeout_ms)},
                  {"body_timeout", TimeoutField(&ServeConfig::body_timeout_ms)},
                  {"idle_timeout", TimeoutField(&ServeConfig::idle_timeout_ms)},
                  {"write_timeout", TimeoutField(&ServeConfig::write_timeout_ms)},
                  {"drain_timeout", TimeoutField(&ServeConfig::drain_timeout_ms)},
                  {"history_interval", TimeoutField(&ServeConfig::history_interval_ms)},
                  {"heap_arenas", IntField(&ServeConfig::heap_arenas, 0, 1024)},
                  {"heap_release_interval",
                   DurationField(&ServeConfig::heap_release_interval_ms, 24 * 3600 * 1000LL)},
                  {"max_connections", IntField(&ServeConfig::max_connections, 16, 1 << 20)},
                  {"max_connections_per_client",
                   IntField(&ServeConfig::max_connections_per_client, 1, 1 << 20)},
                  {"gpu_layers", IntField(&ServeConfig::gpu_layers, -1, 100000)},
                  {"log_level", StringField(&ServeConfig::log_level,
                                            {"trace", "debug", "info", "warn", "error"})},
                  {"api_key", StringField(&ServeConfig::api_key)},
                  {"api_key_file", StringField(&ServeConfig::api_key_file)},
                  {"metrics_require_key", BoolField(&ServeConfig::metrics_require_key)},
                  {"embeddings", BoolField(&ServeConfig::embeddings)},
                  {"tls_cert_file", StringField(&ServeConfig::tls_cert_file)},
                  {"tls_key_file", StringField(&ServeConfig::tls_key_file)},
                  {"uplink_url",
                   [](ServeConfig* c, const std::string& k, const std::string& v) {
                     if (!v.empty() && v.rfind("http://", 0) != 0 && v.rfind("https://", 0) != 0) {
                       return Status::InvalidArgument(
                           "'" + k + "' must start with http:// or https://, got '" + v + "'", k);
                     }
                     std::string url = v;
                     while (!url.empty() && url.back() == '/') url.pop_back();
                     c->uplink_url = url;
                     return Status::Ok();
                   }},
                  {"uplink_format", StringField(&ServeConfig::uplink_format, {"otlp", "webhook"})},
                  {"uplink_token", StringField(&ServeConfig::uplink_token)},
                  {"uplink_tls_ca_file", StringField(&ServeConfig::uplink_tls_ca_file)},
                  {"uplink_interval", TimeoutField(&ServeConfig::uplink_interval_ms)},
                  {"uplink_timeout", TimeoutField(&ServeConfig::uplink_timeout_ms)},
                  {"uplink_max_backoff", TimeoutField(&ServeConfig::uplink_max_backoff_ms)},
                  {"uplink_spool_size",
                   [](ServeConfig* c, const std::string& k, const std::string& v) {
                     auto b = util::ParseBytes(v);
                     if (!b.ok())
                       return Status::InvalidArgument("'" + k + "': " + b.status().message(), k);
                     if (*b < (64u << 10) || *b > (64ull << 30)) {
                       return Status::InvalidArgument(
                           "'" + k + "' must be between 64KiB and 64GiB, got '" + v + "'", k);
                     }
                     c->uplink_spool_size = *b;
                     return Status::Ok();
                   }},
                  {"pinned_cache_size",
                   [](ServeConfig* c, const std::string& k, const std::string& v) {
                     auto b = util::ParseBytes(v);
                     if (!b.ok())
                       return Status::InvalidArgument("'" + k + "': " + b.status().message(), k);
                     if (*b < (1u << 20) || *b > (1ull << 40)) {
                       return Status::InvalidArgument(
                           "'" + k + "' must be between 1MiB and 1TiB, got '" + v + "'", k);
                     }
                     c->pinned_cache_size = *b;
                     return Status::Ok();
                   }},
                  {"state_dir", StringField(&ServeConfig::state_dir)},
                  {"box_id",
                   [](ServeConfig* c, const std::string& k, const std::string& v) {
                     if (v.empty() || v.size() > 128 ||
                         v.find_first_not_of(
                             "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                             "._-") != std::string::npos) {
                       return Status::InvalidArgument("'" + k +
                                                          "' must be 1-128 characters of letters, "
                                                          "digits, '.', '_' or '-', got '" +
                                                          v + "'",
                                                      k);
                     }
                     c->box_id = v;
                     return Status::Ok();
                   }},
                  {"audit_dir", StringField(&ServeConfig::audit_dir)},
                  {"audit_checkpoint_every",
                   IntField(&ServeConfig::audit_checkpoint_every, 1, 1000000)},
                  {"audit_checkpoint_interval",
                   TimeoutField(&ServeConfig::audit_checkpoint_interval_ms)},
                  {"model_store", StringField(&ServeConfig::model_store)},
                  {"admin_key_file", StringField(&ServeConfig::admin_key_file)},
                  {"model_hot_standby", BoolField(&ServeConfig::model_hot_standby)},
                  {"signature_policy",
                   [](ServeConfig* c, const std::string& k, const std::string& v) {
                     auto p = models::ParseSignaturePolicies(v);
                     if (!p.ok())
                       return Status::InvalidArgument("'" + k + "': " + p.status().message(), k);
                     c->signature_policy = v;
                     return Status::Ok();
                   }},
                  {"trusted_keys", StringField(&ServeConfig::trusted_keys)},
      {"pull_window",
       [](ServeConfig* c, const std::string& k, const std::string& v) {
         auto w = util::DailyWindow::Parse(v, k);
         if (!w.ok()) return w.status();
         c->pull_window = v;
         return Status::Ok();
       }},
                  {"fleet_url",
                   [](ServeConfig* c, const std::string& k, const std::string& v) {
                     if (!v.empty() && v.rfind("https://", 0) != 0 &&
                         v.rfind("http://", 0) != 0 && v.rfind("oci://", 0) != 0 &&
                         v.rfind("file://", 0) != 0 && v.rfind('/', 0) != 0) {
                       return Status::InvalidArgument(
                           "'" + k +
                               "' must be an https://, http:// or oci:// reference or an "
                               "absolute path, got '" +
                               v + "'",
                           k);
                     }
                     c->fleet_url = v;
                     return Status::Ok();
                   }},
                  {"fleet_interval", TimeoutField(&ServeConfig::fleet_interval_ms)},
                  {"fleet_site", StringField(&ServeConfig::fleet_site)},
                  {"fleet_labels",
                   [](ServeConfig* c, const std::string& k, const std::string& v) {
                     auto labels = fleet::ParseLabels(v, k);  // the agent's own reader
                     if (!labels.ok()) return labels.status();
                     c->fleet_labels = v;
                     return Status::Ok();
                   }},
                  {"fleet_report_url",
                   [](ServeConfig* c, const std::string& k, const std::string& v) {
                     if (!v.empty() && v.rfind("https://", 0) != 0 && v.rfind("http://", 0) != 0) {
                       return Status::InvalidArgument(
                           "'" + k + "' must start with http:// or https://, got '" + v + "'", k);
                     }
                     c->fleet_report_url = v;
                     return Status::Ok();
                   }},
                  {"fleet_token", StringField(&ServeConfig::fleet_token)},
                  {"fleet_tls_ca_file", StringField(&ServeConfig::fleet_tls_ca_file)},
                  {"fleet_trusted_keys", StringField(&ServeConfig::fleet_trusted_keys)},
                  {"temperature", SamplingField(&engine::SamplingParams::temperature, 0, 2)},
                  {"top_k", SamplingField(&engine::SamplingParams::top_k, 0, 1 << 20)},
                  {"top_p", SamplingField(&engine::SamplingParams::top_p, 0.0001, 1)},
                  {"min_p", SamplingField(&engine::SamplingParams::min_p, 0, 1)},
                  {"repeat_penalty",
                   SamplingField(&engine::SamplingParams::repeat_penalty, 0.01, 10)},
                  {"reasoning_budget",
                   SamplingField(&engine::SamplingParams::thinking_budget, -1, 1 << 20)},
              };
  return *m;
}

}  // namespace

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "outpost";
  return buf;
}

std::string BoxId(const ServeConfig& cfg) {
  return cfg.box_id.empty() ? HostName() : cfg.box_id;
}

std::string StateDir(const ServeConfig& cfg) {
  if (!cfg.state_dir.empty()) return cfg.state_dir;
  if (const char* s = std::getenv("STATE_DIRECTORY"); s != nullptr && *s) {
    std::string dir = s;
    const size_t colon = dir.find(':');  // systemd lists several, ':'-separated
    return colon == std::string::npos ? dir : dir.substr(0, colon);
  }
  if (const char* x = std::getenv("XDG_STATE_HOME"); x != nullptr && *x) {
    return std::string(x) + "/outpost";
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr && *home ? home : ".") + "/.local/state/outpost";
}

const std::vector<std::string>& ConfigKeys() {
  static const auto* keys = [] {
    auto* v = new std::vector<std::string>();
    for (const auto& [k, _] : Setters()) v->push_back(k);
    return v;
  }();
  return *keys;
}

Status ApplySetting(ServeConfig* cfg, const std::string& key, const std::string& value) {
  auto it = Setters().find(key);
  if (it == Setters().end()) {
    std::string known;
    for (const auto& k : ConfigKeys()) known += (known.empty() ? "" : ", ") + k;
    return Status::InvalidArgument("unknown key '" + key + "' (known keys: " + known + ")", key);
  }
  return it->second(cfg, key, value);
}

// The `pinned_prompts:` list: mappings with one of system, system_file or
// prompt, and optionally tenant and model. Errors name the line and the field.
static Status ParsePinnedPrompts(const std::string& path, const YAML::Node& list,
                                 std::vector<PinnedPromptConfig>* out) {
  const auto at = [&path](const YAML::Node& n) {
    return path + " line " + std::to_string(n.Mark().line + 1) + ": ";
  };
  if (!list.IsSequence() || list.size() == 0) {
    return Status::InvalidArgument(
        at(list) + "'pinned_prompts' must be a non-empty list of {system | system_file | prompt}",
        "pinned_prompts");
  }
  constexpr size_t kMaxText = 1 << 20;
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node& m = list[i];
    const std::string field = "pinned_prompts[" + std::to_string(i) + "]";
    if (!m.IsMap()) {
      return Status::InvalidArgument(
          at(m) + field + " must be a mapping with one of system, system_file or prompt", field);
    }
    PinnedPromptConfig p;
    int texts = 0;
    for (const auto& f : m) {
      const std::string fk = f.first.IsScalar() ? f.first.as<std::string>() : std::string();
      if (!f.second.IsScalar()) {
        return Status::InvalidArgument(
            at(f.first) + field + "." + fk + " must be a single text value", field + "." + fk);
      }
      const std::string fv = f.second.as<std::string>();
      if (fk == "system" || fk == "prompt" || fk == "system_file") {
        ++texts;
        if (fk == "system_file") {
          // A regular file only (not a FIFO or /dev/zero), read up to one byte past the limit.
          std::error_code ec;
          std::ifstream in;
          if (std::filesystem::is_regular_file(fv, ec)) in.open(fv, std::ios::binary);
          if (!in.is_open()) {
            return Status::InvalidArgument(at(f.first) + field + ".system_file '" + fv +
                                               "' cannot be read (not a readable regular file)",
                                           field + "." + fk);
          }
          p.system.resize(kMaxText + 1);
          in.read(p.system.data(), static_cast<std::streamsize>(p.system.size()));
          p.system.resize(static_cast<size_t>(in.gcount()));
        } else {
          (fk == "system" ? p.system : p.prompt) = fv;
        }
        const std::string& text = fk == "prompt" ? p.prompt : p.system;
        if (text.empty() || text.size() > kMaxText) {
          return Status::InvalidArgument(at(f.first) + field + "." + fk + " must hold 1 byte to " +
                                             "1 MiB of text, not " + std::to_string(text.size()),
                                         field + "." + fk);
        }
      } else if (fk == "tenant") {
        p.tenant = fv;
      } else if (fk == "model") {
        if (fv.empty()) {
          return Status::InvalidArgument(at(f.first) + field + ".model must name a served model",
                                         field + ".model");
        }
        p.model = fv;
      } else {
        return Status::InvalidArgument(at(f.first) + "unknown key '" + field + "." + fk +
                                           "' (use system, system_file, prompt, tenant, model)",
                                       field + "." + fk);
      }
    }
    if (texts != 1) {
      return Status::InvalidArgument(
          at(m) + field + " needs exactly one of system, system_file or prompt, not " +
              std::to_string(texts),
          field);
    }
    out->push_back(std::move(p));
  }
  return Status::Ok();
}

Status LoadConfigFile(const std::string& path, ServeConfig* cfg) {
  auto loaded = LoadYamlFile(path, "config", "config");
  if (!loaded.ok()) return loaded.status();
  const YAML::Node root = *loaded;
  if (root.IsNull()) return Status::Ok();  // empty file: all defaults
  if (!root.IsMap())
    return Status::InvalidArgument(path + ": the top level must be a mapping of key: value",
                                   "config");
  for (const auto& kv : root) {
    const std::string line = std::to_string(kv.first.Mark().line + 1);
    if (!kv.first.IsScalar()) {
      return Status::InvalidArgument(
          path + " line " + line + ": a key must be a plain name, not a list or mapping", "config");
    }
    const std::string key = kv.first.as<std::string>();
    if (key == "pinned_prompts") {
      cfg->pinned_prompts.clear();
      if (Status st = ParsePinnedPrompts(path, kv.second, &cfg->pinned_prompts); !st.ok())
        return st;
      continue;
    }
    if (key == "models") {
      if (!kv.second.IsSequence() || kv.second.size() == 0) {
        return Status::InvalidArgument(
            path + " line " + line + ": 'models' must be a non-empty list of {path, id}", key);
      }
      std::vector<ExtraModel> list;
      for (const auto& m : kv.second) {
        ExtraModel e;
        if (!m.IsMap()) {
          return Status::InvalidArgument(
              path + " line " + std::to_string(m.Mark().line + 1) +
                  ": each entry of 'models' must be a mapping with 'path' (and 'id')",
              key);
        }
        for (const auto& f : m) {
          if (!f.first.IsScalar()) {
            return Status::InvalidArgument(
                path + " line " + std::to_string(f.first.Mark().line + 1) +
                    ": a key must be a plain name, not a list or mapping",
                key);
          }
          const std::string fk = f.first.as<std::string>();
          const std::string fv = f.second.IsScalar() ? f.second.as<std::string>() : "";
          if (fk == "path") {
            e.path = fv;
          } else if (fk == "id") {
            e.id = fv;
          } else if (fk == "chat_template_file") {
            e.chat_template_file = fv;
          } else {
            return Status::InvalidArgument(
                path + " line " + std::to_string(f.first.Mark().line + 1) +
                    ": unknown key 'models[]." + fk + "' (use path, id, chat_template_file)",
                key);
          }
        }
        if (e.path.empty()) {
          return Status::InvalidArgument(
              path + " line " + std::to_string(m.Mark().line + 1) + ": 'models[].path' is required",
              key);
        }
        list.push_back(std::move(e));
      }
      cfg->model = list[0].path;
      cfg->model_id = list[0].id;
      cfg->chat_template_file = list[0].chat_template_file;
      cfg->extra_models.assign(list.begin() + 1, list.end());
      continue;
    }
    if (!kv.second.IsScalar()) {
      return Status::InvalidArgument(path + ": '" + key + "' (line " +
                                         std::to_string(kv.first.Mark().line + 1) +
                                         ") must be a single value, not a list or mapping",
                                     key);
    }
    Status st = ApplySetting(cfg, key, kv.second.as<std::string>());
    if (!st.ok()) {
      return Status::InvalidArgument(
          path + " line " + std::to_string(kv.first.Mark().line + 1) + ": " + st.message(), key);
    }
  }
  return Status::Ok();
}

std::string DefaultModelPath() {
  if (const char* env = std::getenv("OUTPOST_MODEL"); env && *env) return env;
  std::string cache;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    cache = x;
  else if (const char* h = std::getenv("HOME"); h && *h)
    cache = std::string(h) + "/.cache";
  else
    cache = ".cache";
  return cache + "/outpost/models/SmolLM2-135M-Instruct.Q4_1.gguf";
}

models::ModelRuntimeOptions ModelRuntimeOptionsFrom(const ServeConfig& cfg, size_t index) {
  models::ModelRuntimeOptions o;
  if (index == 0) {
    o.path = cfg.model;
    o.id = cfg.model_id;
    o.chat_template_file = cfg.chat_template_file;
  } else {
    const ExtraModel& e = cfg.extra_models.at(index - 1);
    o.path = e.path;
    o.id = e.id;
    o.chat_template_file = e.chat_template_file;
  }
  o.split_reasoning = cfg.reasoning_format != "none";
  o.ctx_per_session = cfg.ctx_size;
  o.parallel = cfg.parallel;
  o.parallel_auto_max = cfg.parallel_auto_max;
  o.headroom = cfg.headroom;
  o.kv_type = cfg.kv_type;
  o.batch_size = cfg.batch_size;
  o.prefill_chunk = cfg.prefill_chunk;
  o.step_budget_ms = cfg.step_budget_ms;
  o.prefix_cache = cfg.prefix_cache;
  o.queue_length = cfg.queue_length;
  o.queue_wait_ms = cfg.queue_wait_ms;
  o.priority_aging_ms = cfg.priority_aging_ms;
  o.speculative_draft = cfg.speculative_draft;
  o.speculative_max_batch = cfg.speculative_max_batch;
  o.batch_yield_ms = cfg.batch_yield_ms;
  o.batch_busy_tokens = cfg.batch_busy_tokens;
  o.threads = cfg.threads;
  o.threads_batch = cfg.threads_batch;
  o.sampling = cfg.sampling;
  o.embeddings = cfg.embeddings;
  o.gpu_layers = cfg.gpu_layers;
  for (const PinnedPromptConfig& p : cfg.pinned_prompts) {
    o.pinned_prompts.push_back({p.system, p.prompt, p.scope, p.model});
  }
  if (!o.pinned_prompts.empty()) o.pinned_dir = StateDir(cfg) + "/pinned";
  o.pinned_dir_max_bytes = cfg.pinned_cache_size;
  return o;
}

Status ApplyModelFlags(ServeConfig* cfg, const std::vector<std::string>& values) {
  std::vector<ExtraModel> list;
  for (const std::string& v : values) {
    ExtraModel e;
    // "ID=PATH" names the model; a bare path keeps its file name as the id.
    const size_t eq = v.find('=');
    if (eq != std::string::npos && v.find('/') > eq) {
      e.id = v.substr(0, eq);
      e.path = v.substr(eq + 1);
      if (e.id.empty() || e.path.empty()) {
        return Status::InvalidArgument("'model' must be PATH or ID=PATH, got '" + v + "'", "model");
      }
    } else {
      e.path = v;
    }
    if (e.path.empty()) return Status::InvalidArgument("'model' must not be empty", "model");
    list.push_back(std::move(e));
  }
  if (list.empty()) return Status::Ok();
  cfg->model = list[0].path;
  if (!list[0].id.empty()) cfg->model_id = list[0].id;
  cfg->extra_models.assign(list.begin() + 1, list.end());
  return Status::Ok();
}

}  // namespace outpost::app

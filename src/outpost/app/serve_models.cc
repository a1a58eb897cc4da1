#include "outpost/app/serve_models.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "outpost/models/model_runtime.h"
#include "outpost/router/registry_auth_file.h"

namespace outpost::app {
namespace {

// The admin key: $OUTPOST_ADMIN_KEY, else the first key in admin_key_file.
StatusOr<std::string> AdminKey(const ServeConfig& cfg) {
  if (const char* env = std::getenv("OUTPOST_ADMIN_KEY"); env != nullptr && *env)
    return std::string(env);
  if (cfg.admin_key_file.empty()) return std::string();
  auto keys = api::ApiKeys::ReadFile(cfg.admin_key_file);
  if (!keys.ok()) {
    return Status::InvalidArgument(
        "admin_key_file '" + cfg.admin_key_file + "': no key in it, or it cannot be read",
        "admin_key_file");
  }
  if (keys->front().size() < 16) {
    return Status::InvalidArgument(
        "admin_key_file '" + cfg.admin_key_file + "': the admin key must be at least 16 characters",
        "admin_key_file");
  }
  return keys->front();
}

// "a,b,,c" → {"a", "b", "c"}.
std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  for (size_t start = 0; start < text.size();) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    if (comma > start) out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

}  // namespace

namespace {

// The model's name when cfg.model is a store reference (ModelIsStoreRef).
std::optional<std::string> StoreModelName(const ServeConfig& cfg) {
  std::error_code ec;
  if (cfg.model.empty() || std::filesystem::exists(cfg.model, ec)) return std::nullopt;
  std::string name, version;
  const std::string ref = cfg.model.find(':') != std::string::npos ? cfg.model : cfg.model + ":x";
  if (!models::ParseModelRef(ref, &name, &version).ok()) return std::nullopt;
  return name;
}

}  // namespace

bool ModelIsStoreRef(const ServeConfig& cfg) {
  return StoreModelName(cfg).has_value();
}

std::vector<std::string> ModelIdsToServe(const ServeConfig& cfg) {
  std::vector<std::string> ids;
  for (size_t i = 0; i <= cfg.extra_models.size(); ++i) {
    std::optional<std::string> store_name = i == 0 ? StoreModelName(cfg) : std::nullopt;
    ids.push_back(store_name ? *store_name : models::ModelIdFor(ModelRuntimeOptionsFrom(cfg, i)));
  }
  return ids;
}

StatusOr<std::unique_ptr<ServedModels>> ServedModels::Open(const ServeConfig& cfg,
                                                           models::ServingSet* serving,
                                                           models::MemoryLedger* ledger,
                                                           telemetry::StatRegistry* stats,
                                                           audit::AuditLog* audit) {
  std::unique_ptr<ServedModels> s(new ServedModels(cfg, serving, ledger, stats));
  auto key = AdminKey(cfg);
  if (!key.ok()) return key.status();
  if (!ModelIsStoreRef(cfg) && key->empty() && cfg.fleet_url.empty()) {
    return s;  // files only, no /admin/
  }
  const std::string dir = cfg.model_store.empty() ? StateDir(cfg) + "/models" : cfg.model_store;
  auto store = models::ModelStore::Open(dir);
  if (!store.ok()) {
    return Status::InvalidArgument("model_store: " + store.status().message(), "model_store");
  }
  s->store_ = std::move(store).value();
  models::ModelLifecycle::Options lo;
  lo.hot_standby = cfg.model_hot_standby;
  auto policies = models::ParseSignaturePolicies(cfg.signature_policy);
  if (!policies.ok()) return policies.status();
  auto trusted = models::LoadTrustedKeys(SplitList(cfg.trusted_keys));
  if (!trusted.ok()) return trusted.status();
  // The kept signature is checked again before a version loads: a key
  // removed from trusted_keys, or a policy tightened since the pull, holds.
  lo.recheck = [store = s->store_.get(), policies = *policies,
                trusted = *trusted](const models::ModelVersion& v) -> Status {
    const models::SignaturePolicy policy = policies.For(v.source);
    if (policy == models::SignaturePolicy::kOff) return Status::Ok();
    auto bytes = store->SignatureBytes(v.ref());
    std::string note;
    Status st = models::ApplySignaturePolicy(policy, bytes.ok() ? *bytes : std::string(), v.files(),
                                             trusted, &note);
    if (!st.ok()) {
      return Status(st.code(), v.ref() + " at activation: " + st.message(), "signature");
    }
    if (note.rfind("verified", 0) != 0) {
      spdlog::warn("lifecycle: {} at activation: signature {}", v.ref(), note);
    }
    return Status::Ok();
  };
  ServeConfig model_cfg = cfg;
  auto loader = [model_cfg, ledger, stats](
                    const std::string& path, const std::string& id,
                    const std::string& version) -> StatusOr<std::shared_ptr<models::ServedModel>> {
    models::ModelRuntimeOptions mo = ModelRuntimeOptionsFrom(model_cfg, 0);
    mo.path = path;
    mo.id = id;
    mo.version = version;
    return models::LoadModel(mo, ledger, stats);
  };
  s->lifecycle_ =
      std::make_unique<models::ModelLifecycle>(s->store_.get(), serving, loader, stats, lo);
  auto window = util::DailyWindow::Parse(cfg.pull_window, "pull_window");
  if (!window.ok()) return window.status();
  s->admin_ = std::make_unique<api::AdminApi>(s->lifecycle_.get(), *key, audit, *policies, *trusted,
                                              *window);
  s->admin_->SetLedger(ledger);
  if (!cfg.fleet_url.empty()) {
    fleet::FleetOptions fo;
    fo.source = cfg.fleet_url;
    fo.interval_ms = cfg.fleet_interval_ms;
    fo.node = BoxId(cfg);
    fo.identity.site = cfg.fleet_site.empty() ? fo.node : cfg.fleet_site;
    auto labels = fleet::ParseLabels(cfg.fleet_labels, "fleet_labels");
    if (!labels.ok()) return labels.status();
    fo.identity.labels = *labels;
    fo.report_url = cfg.fleet_report_url;
    fo.token = cfg.fleet_token;
    if (const char* t = std::getenv("OUTPOST_FLEET_TOKEN"); t != nullptr && *t) fo.token = t;
    fo.ca_file = cfg.fleet_tls_ca_file;
    if (cfg.fleet_trusted_keys.empty()) {
      fo.document_keys = *trusted;
    } else {
      auto doc_keys = models::LoadTrustedKeys(SplitList(cfg.fleet_trusted_keys));
      if (!doc_keys.ok()) {
        return Status::InvalidArgument("fleet_trusted_keys: " + doc_keys.status().message(),
                                       "fleet_trusted_keys");
      }
      fo.document_keys = *doc_keys;
    }
    if (fo.document_keys.empty()) {
      return Status::InvalidArgument(
          "fleet_url is set, but no key may sign the desired state: set fleet_trusted_keys (or "
          "trusted_keys)",
          "fleet_trusted_keys");
    }
    fo.state_file = StateDir(cfg) + "/fleet-state.json";
    std::error_code ec;
    std::filesystem::create_directories(StateDir(cfg), ec);
    fo.pull_defaults.registry.http.ca_file = cfg.fleet_tls_ca_file;
    fo.pull_defaults.registry_auth_files = router::DefaultRegistryAuthFiles();
    if (const char* t = std::getenv("OUTPOST_PULL_TOKEN"); t != nullptr) {
      fo.pull_defaults.registry.http.bearer_token = t;
    }
    fo.pull_defaults.trusted_keys = *trusted;
    fo.pull_defaults.pull.window = *window;
    fo.policies = *policies;
    s->fleet_ = std::make_unique<fleet::FleetAgent>(s->lifecycle_.get(), std::move(fo), stats);
    fleet::FleetAgent* agent = s->fleet_.get();
    s->admin_->SetFleet([agent] { return agent->Observed(); }, [agent] { agent->Wake(); });
  }
  spdlog::info("model store: {} ({} version(s)); /admin/ {}", dir, s->store_->List().size(),
               key->empty() ? "off (no admin key)" : "on");
  return s;
}

Status ServedModels::Load() {
  for (size_t i = 0; i <= cfg_.extra_models.size(); ++i) {
    std::shared_ptr<const models::ServedModel> served;
    std::string what;
    if (i == 0 && lifecycle_ != nullptr && ModelIsStoreRef(cfg_)) {
      what = cfg_.model + " (from the store " + store_->dir() + ")";
      auto started = lifecycle_->Start(cfg_.model);
      if (!started.ok())
        return Status(started.status().code(), what + ": " + started.status().message());
      served = *started;
      spdlog::info("serving {} version {} as '{}'", cfg_.model, served->version, served->id);
    } else {
      const models::ModelRuntimeOptions mo = ModelRuntimeOptionsFrom(cfg_, i);
      what = mo.path;
      auto loaded = models::LoadModel(mo, ledger_, stats_);
      if (!loaded.ok())
        return Status(loaded.status().code(), what + ": " + loaded.status().message());
      file_schedulers_.push_back((*loaded)->scheduler);
      served = *loaded;
      serving_->Add(std::move(loaded).value());
    }
    ids_ += (ids_.empty() ? "'" : ", '") + served->id + "'";
    id_list_.push_back(served->id);
  }
  if (fleet_ != nullptr) return fleet_->Start();
  return Status::Ok();
}

std::vector<std::shared_ptr<scheduler::Scheduler>> ServedModels::Schedulers() const {
  auto all = file_schedulers_;
  if (lifecycle_ != nullptr) {
    for (auto& s : lifecycle_->Schedulers()) all.push_back(std::move(s));
  }
  return all;
}

void ServedModels::Stop() {
  if (fleet_ != nullptr) fleet_->Stop();
  for (auto& s : Schedulers()) s->Stop();
}

}  // namespace outpost::app

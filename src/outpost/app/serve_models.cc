#include "outpost/app/serve_models.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "outpost/models/model_runtime.h"

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

}  // namespace

bool ModelIsStoreRef(const ServeConfig& cfg) {
  std::error_code ec;
  if (cfg.model.empty() || std::filesystem::exists(cfg.model, ec)) return false;
  std::string name, version;
  if (cfg.model.find(':') != std::string::npos) {
    return models::ParseModelRef(cfg.model, &name, &version).ok();
  }
  return models::ParseModelRef(cfg.model + ":x", &name, &version).ok();
}

StatusOr<std::unique_ptr<ServedModels>> ServedModels::Open(const ServeConfig& cfg,
                                                           models::ServingSet* serving,
                                                           models::MemoryLedger* ledger,
                                                           telemetry::StatRegistry* stats,
                                                           audit::AuditLog* audit) {
  std::unique_ptr<ServedModels> s(new ServedModels(cfg, serving, ledger, stats));
  auto key = AdminKey(cfg);
  if (!key.ok()) return key.status();
  if (!ModelIsStoreRef(cfg) && key->empty()) return s;  // files only, no /admin/
  const std::string dir = cfg.model_store.empty() ? StateDir(cfg) + "/models" : cfg.model_store;
  auto store = models::ModelStore::Open(dir);
  if (!store.ok()) {
    return Status::InvalidArgument("model_store: " + store.status().message(), "model_store");
  }
  s->store_ = std::move(store).value();
  models::ModelLifecycle::Options lo;
  lo.hot_standby = cfg.model_hot_standby;
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
  auto policies = models::ParseSignaturePolicies(cfg.signature_policy);
  if (!policies.ok()) return policies.status();
  std::vector<std::string> key_files;
  for (size_t start = 0; start < cfg.trusted_keys.size();) {
    size_t comma = cfg.trusted_keys.find(',', start);
    if (comma == std::string::npos) comma = cfg.trusted_keys.size();
    if (comma > start) key_files.push_back(cfg.trusted_keys.substr(start, comma - start));
    start = comma + 1;
  }
  auto trusted = models::LoadTrustedKeys(key_files);
  if (!trusted.ok()) return trusted.status();
  auto window = util::DailyWindow::Parse(cfg.pull_window, "pull_window");
  if (!window.ok()) return window.status();
  s->admin_ = std::make_unique<api::AdminApi>(s->lifecycle_.get(), *key, audit,
                                              std::move(*policies), std::move(*trusted), *window);
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
    ++count_;
  }
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
  for (auto& s : Schedulers()) s->Stop();
}

}  // namespace outpost::app

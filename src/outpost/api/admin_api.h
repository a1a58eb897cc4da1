// AdminApi — /admin/: the model store and lifecycle over HTTP, behind a key
// of its own.
//
// Routes (JSON in and out; errors in the OpenAI error envelope, naming the
// field):
//   GET    /admin/models                 every stored version, and what is loaded
//   GET    /admin/models/{name:version}  one version
//   POST   /admin/models/import          {"path", "model", "sha256"?}: a file on the box
//   POST   /admin/models/pull            {"url", "model", "sha256", "max_rate"?}: resumable
//   POST   /admin/models/verify          {"model": "name:version"}
//   POST   /admin/models/validate        {"model", "against"?, "suite"?: path on the box}:
//                                         the report (models/model_validation.h); its
//                                         peak is reserved in the live memory ledger
//   POST   /admin/models/activate        {"model": "name:version"}
//   POST   /admin/models/rollback        {"model": "name", "reason"?} (ends a canary)
//   POST   /admin/models/canary          {"model": "name:version", "steps"?: [5, 25, 50],
//                                         "bake"?: "10m", "min_requests"?: 50,
//                                         "max_ttft_ratio"?: 1.5, "max_error_increase"?: 0.05}
//   POST   /admin/models/promote         {"model": "name"}: the canary now
//   DELETE /admin/models/{name:version}
//   GET    /admin/fleet                  the fleet agent's observed state
//   POST   /admin/fleet/sync             poll the desired state now
//
// Access: "Authorization: Bearer <admin key>". With no admin key configured
// every route answers 403 (the admin API is off); a missing or wrong key
// gets 401. The API keys of /v1 never open it, and the admin key is never
// logged. Every operation, allowed or not, is logged and (when configured)
// appended to the audit log. Operations run on the calling worker thread and
// are serialised by the lifecycle; a long one (a load) blocks only its caller.
// Thread-safe; the lifecycle and the audit log must outlive it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "outpost/api/api_keys.h"
#include "outpost/api/http_message.h"
#include "outpost/models/memory_ledger.h"
#include "outpost/models/model_lifecycle.h"
#include "outpost/models/model_signature.h"
#include "outpost/util/daily_window.h"

namespace outpost::audit {
class AuditLog;
}  // namespace outpost::audit

namespace outpost::api {

class AdminApi {
 public:
  // `key` empty: the admin API is off. `audit` may be null.
  // Pulls and imports check model signatures under `policies` against
  // `trusted_keys` (models/model_signature.h); pulls move bytes only in
  // `pull_window`.
  AdminApi(models::ModelLifecycle* lifecycle, std::string key, audit::AuditLog* audit,
           models::SignaturePolicies policies = {},
           std::vector<models::TrustedKey> trusted_keys = {}, util::DailyWindow pull_window = {})
      : lifecycle_(lifecycle),
        keys_(key.empty() ? ApiKeys() : ApiKeys({std::move(key)})),
        audit_(audit),
        policies_(std::move(policies)),
        trusted_keys_(std::move(trusted_keys)),
        pull_window_(std::move(pull_window)) {}

  // True for paths under /admin (the caller then has nothing left to do).
  static bool Owns(const std::string& path) {
    return path == "/admin" || path.rfind("/admin/", 0) == 0;
  }
  void Handle(const HttpRequest& req, HttpResponse& res);
  // The serving box's memory ledger: a validation reserves its peak there
  // (refused when it does not fit). Call before serving.
  void SetLedger(models::MemoryLedger* ledger) { ledger_ = ledger; }
  // The fleet agent's hooks (app/ wires them; without them /admin/fleet is
  // 404). Call before serving.
  void SetFleet(std::function<nlohmann::json()> observed, std::function<void()> sync) {
    fleet_observed_ = std::move(observed);
    fleet_sync_ = std::move(sync);
  }
  // For /ready (no key needed): the running canary of model `id` — version,
  // share, step, both versions' figures, the last decision — or null.
  nlohmann::json CanaryFor(const std::string& id) const;

 private:
  // The operation's answer as JSON, or the error; names what it did.
  StatusOr<nlohmann::json> Run(const HttpRequest& req, std::string* action, std::string* target);

  models::ModelLifecycle* const lifecycle_;
  const ApiKeys keys_;
  audit::AuditLog* const audit_;
  const models::SignaturePolicies policies_;
  const std::vector<models::TrustedKey> trusted_keys_;
  const util::DailyWindow pull_window_;
  models::MemoryLedger* ledger_ = nullptr;
  std::function<nlohmann::json()> fleet_observed_;
  std::function<void()> fleet_sync_;  // pulls' default window (body "window" overrides)
};

// The route label for metrics: the fixed /admin routes, else "/admin/other".
std::string AdminRouteLabel(const std::string& path);

}  // namespace outpost::api

#include "outpost/api/admin_api.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "outpost/api/errors.h"
#include "outpost/api/json_fields.h"
#include "outpost/audit/audit_log.h"
#include "outpost/models/canary_plan.h"
#include "outpost/models/model_validation.h"
#include "outpost/models/version_json.h"
#include "outpost/router/model_source.h"
#include "outpost/router/registry_auth_file.h"
#include "outpost/util/status_macros.h"
#include "outpost/util/units.h"

namespace outpost::api {
namespace {

using nlohmann::json;

json SwapJson(const models::ModelLifecycle::Swap& s) {
  return {{"model", s.model},    {"from", s.from},
          {"to", s.to},          {"from_standby", s.from_standby},
          {"load_s", s.load_s},  {"switch_ms", s.switch_ms},
          {"warmup", s.warmup},  {"cold", s.cold},
          {"held_ms", s.held_ms}};
}

json CanaryJson(const models::ModelLifecycle::CanaryStatus& c) {
  auto outcomes = [](const models::VersionOutcomes::Snapshot& o, double ttft_p95) {
    json j = {{"requests", o.requests},
              {"errors", o.errors},
              {"cancelled", o.cancelled},
              {"empty", o.empty},
              {"tokens", o.tokens}};
    if (o.compared > 0 || o.shadow_skipped > 0) {
      j["compared"] = o.compared;  // shadow: greedy answers compared with the active's
      j["same"] = o.same;
      j["skipped_busy"] = o.shadow_skipped;
    }
    j["ttft_p95_s"] = ttft_p95 >= 0 ? json(ttft_p95) : json(nullptr);
    const double tps = o.DecodeRate(models::ModelLifecycle::kDecodeSample);
    j["decode_tokens_per_second"] = tps >= 0 ? json(tps) : json(nullptr);
    return j;
  };
  return {{"model", c.model},
          {"version", c.version},
          {"baseline", c.baseline},
          {"phase", c.phase},
          {"percent", c.percent},
          {"shadow_percent", c.shadow_percent},
          {"step", c.step},
          {"steps", c.steps},
          {"step_age_s", c.step_age_s},
          {"canary", outcomes(c.canary, c.canary_ttft_p95_s)},
          {"active", outcomes(c.active, c.active_ttft_p95_s)},
          {"last_decision", c.last_decision}};
}

// The body as an object with only `allowed` fields, each a string unless
// named in `typed` (checked by the caller); the `required` ones present and
// non-empty.
StatusOr<json> ParseBody(const std::string& body, const std::set<std::string>& allowed,
                         const std::set<std::string>& required,
                         const std::set<std::string>& typed = {}) {
  json j;
  OUTPOST_ASSIGN_OR_RETURN(j, ParseObjectBody(body, "the body"));
  for (const auto& [k, v] : j.items()) {
    if (allowed.count(k) == 0) {
      std::string names;
      for (const auto& a : allowed) names += (names.empty() ? "" : ", ") + a;
      return Status::InvalidArgument("unknown field '" + k + "' (allowed: " + names + ")", k);
    }
    if (typed.count(k) == 0 && !v.is_string()) {
      return Status::InvalidArgument("'" + k + "' must be a string", k);
    }
  }
  for (const auto& k : required) {
    if (!j.contains(k) || j[k].get<std::string>().empty()) {
      return Status::InvalidArgument("'" + k + "' is required", k);
    }
  }
  return j;
}

}  // namespace

std::string AdminRouteLabel(const std::string& path) {
  for (const char* r :
       {"/admin/models", "/admin/models/import", "/admin/models/verify", "/admin/models/activate",
        "/admin/models/rollback", "/admin/models/canary", "/admin/models/promote",
        "/admin/models/pull", "/admin/fleet", "/admin/fleet/sync"}) {
    if (path == r) return path;
  }
  if (path.rfind("/admin/models/", 0) == 0) return "/admin/models/{ref}";
  return "/admin/other";
}

nlohmann::json AdminApi::CanaryFor(const std::string& id) const {
  for (const auto& c : lifecycle_->Canaries()) {
    if (c.model == id) return CanaryJson(c);
  }
  return nullptr;
}

void AdminApi::Handle(const HttpRequest& req, HttpResponse& res) {
  auto fail = [&](const Status& st) {
    res.status = HttpStatusFor(st.code());
    if (st.retry_after_s() > 0) res.set_header("Retry-After", std::to_string(st.retry_after_s()));
    res.set_content(ErrorBody(st), "application/json");
  };
  if (!keys_.required()) {
    return fail(Status(StatusCode::kPermissionDenied,
                       "the admin API is off: set admin_key_file or $OUTPOST_ADMIN_KEY"));
  }
  if (Status st = keys_.Check(req.header("Authorization")); !st.ok()) {
    spdlog::warn("admin: {} {} from {} refused: {}", req.method, req.path, req.remote_addr,
                 st.message());
    res.set_header("WWW-Authenticate", "Bearer realm=\"outpost-admin\"");
    return fail(Status(StatusCode::kUnauthenticated,
                       req.has_header("Authorization")
                           ? "the admin key presented is not valid (an API key never opens "
                             "/admin/)"
                           : "the admin API needs 'Authorization: Bearer <admin key>'"));
  }
  std::string action, target;
  auto out = Run(req, &action, &target);
  const bool ok = out.ok();
  spdlog::info("admin: {} {} from {}: {}", action, target, req.remote_addr,
               ok ? std::string("ok") : out.status().message());
  if (audit_ != nullptr && action != "list" && action != "show" && action != "fleet") {
    json fields = {{"action", action.rfind("fleet", 0) == 0 ? action : "model." + action},
                   {"target", target},
                   {"client", req.remote_addr},
                   {"result", ok ? "ok" : out.status().message()}};
    audit_->Append("admin", std::move(fields));
  }
  if (!ok) return fail(out.status());
  res.set_content(out->dump(), "application/json");
}

StatusOr<json> AdminApi::Run(const HttpRequest& req, std::string* action, std::string* target) {
  const std::string& path = req.path;
  const bool get = req.method == "GET" || req.method == "HEAD";
  const bool post = req.method == "POST";
  models::ModelStore* store = lifecycle_->store();
  if (path == "/admin/fleet" || path == "/admin/fleet/sync") {
    *action = path == "/admin/fleet" ? "fleet" : "fleet.sync";
    *target = path;
    if (!fleet_observed_) {
      return Status::NotFound("no fleet desired state is configured (fleet_url)");
    }
    if (path == "/admin/fleet") {
      if (!get) return Status::InvalidArgument("use GET for " + path, "method");
      return fleet_observed_();
    }
    if (!post) return Status::InvalidArgument("use POST for " + path, "method");
    fleet_sync_();
    return json{{"sync", "requested"}, {"observed", fleet_observed_()}};
  }
  *action = "unknown";
  *target = path;
  if (path == "/admin/models" && get) {
    *action = "list";
    json versions = json::array();
    for (const auto& v : store->List()) versions.push_back(models::VersionJson(v));
    json loaded = json::array();
    for (const auto& l : lifecycle_->LoadedVersions()) {
      loaded.push_back({{"model", l.model},
                        {"version", l.version},
                        {"role", l.role},
                        {"active_requests", l.active_requests},
                        {"queued_requests", l.queued_requests}});
    }
    json canaries = json::array();
    for (const auto& c : lifecycle_->Canaries()) canaries.push_back(CanaryJson(c));
    return json{{"store", store->dir()},
                {"versions", versions},
                {"loaded", loaded},
                {"canaries", canaries}};
  }
  const bool op = path == "/admin/models/import" || path == "/admin/models/verify" ||
                  path == "/admin/models/activate" || path == "/admin/models/rollback" ||
                  path == "/admin/models/canary" || path == "/admin/models/promote" ||
                  path == "/admin/models/pull" || path == "/admin/models/validate";
  if (op) {
    if (!post) {
      return Status::InvalidArgument("use POST for " + path, "method");
    }
    *action = path.substr(std::string("/admin/models/").size());
    if (*action == "import") {
      json b;
      OUTPOST_ASSIGN_OR_RETURN(
          b, ParseBody(req.body, {"path", "model", "sha256", "signature"}, {"path", "model"}));
      *target = b["model"].get<std::string>();
      router::PullRequest pr;
      pr.source = b["path"].get<std::string>();
      if (pr.source.empty() || pr.source[0] != '/') {
        return Status::InvalidArgument("'path' must be an absolute path on this box", "path");
      }
      pr.ref = *target;
      pr.sha256 = b.value("sha256", "");
      pr.signature_path = b.value("signature", "");
      pr.signature_policy = policies_.For(pr.source);
      pr.trusted_keys = trusted_keys_;
      models::ModelVersion v;
      OUTPOST_ASSIGN_OR_RETURN(v, router::PullModel(store, pr));
      return models::VersionJson(v);
    }
    if (*action == "pull") {
      json b;
      OUTPOST_ASSIGN_OR_RETURN(b, ParseBody(req.body,
                                            {"source", "url", "model", "sha256", "max_rate",
                                             "username", "password", "plain_http", "window"},
                                            {"model"}, {"plain_http"}));
      *target = b["model"].get<std::string>();
      router::PullRequest pr;
      pr.source = b.value("source", b.value("url", ""));  // "url": the older name
      pr.ref = *target;
      pr.sha256 = b.value("sha256", "");
      if (pr.source.rfind("https://", 0) != 0 && pr.source.rfind("http://", 0) != 0 &&
          pr.source.rfind("oci://", 0) != 0) {
        // A file on this box comes in through import, not pull.
        return Status::InvalidArgument(
            "'source' must be an https://, http:// or oci:// reference, got '" + pr.source + "'",
            "source");
      }
      if (b.contains("plain_http") && !b["plain_http"].is_boolean()) {
        return Status::InvalidArgument("'plain_http' must be true or false", "plain_http");
      }
      pr.registry.plain_http = b.value("plain_http", false);
      pr.registry.username = b.value("username", "");
      pr.registry.password = b.value("password", "");
      if (pr.registry.username.empty() != pr.registry.password.empty()) {
        return Status::InvalidArgument("'username' and 'password' go together",
                                       pr.registry.username.empty() ? "username" : "password");
      }
      // Without a user: what `docker login` saved for the server's user.
      pr.registry_auth_files = router::DefaultRegistryAuthFiles();
      if (b.contains("max_rate")) {
        auto rate = util::ParseBytes(b["max_rate"].get<std::string>());
        if (!rate.ok() || *rate == 0) {
          return Status::InvalidArgument("'max_rate' must be a size per second such as 2MiB",
                                         "max_rate");
        }
        pr.pull.max_bytes_per_s = *rate;
      }
      pr.pull.window = pull_window_;
      if (b.contains("window")) {
        util::DailyWindow w;
        OUTPOST_ASSIGN_OR_RETURN(
            w, util::DailyWindow::Parse(b["window"].get<std::string>(), "window"));
        pr.pull.window = w;
      }
      if (const char* t = std::getenv("OUTPOST_PULL_TOKEN"); t != nullptr) {
        pr.registry.http.bearer_token = t;
      }
      pr.signature_policy = policies_.For(pr.source);
      pr.trusted_keys = trusted_keys_;
      models::ModelVersion v;
      OUTPOST_ASSIGN_OR_RETURN(v, router::PullModel(store, pr));
      return models::VersionJson(v);
    }
    if (*action == "validate") {
      json b;
      OUTPOST_ASSIGN_OR_RETURN(b, ParseBody(req.body, {"model", "against", "suite"}, {"model"}));
      *target = b["model"].get<std::string>();
      models::ValidateRequest vr;
      vr.ref = *target;
      vr.against = b.value("against", "");
      if (b.contains("suite")) {
        const std::string suite = b["suite"].get<std::string>();
        if (suite.empty() || suite[0] != '/') {
          return Status::InvalidArgument("'suite' must be an absolute path on this box", "suite");
        }
        auto loaded = models::LoadValidationSuite(suite);
        if (!loaded.ok()) return Status::InvalidArgument(loaded.status().message(), "suite");
        vr.suite = *loaded;
      }
      vr.ledger = ledger_;
      return models::ValidateVersion(store, vr);
    }
    if (*action == "verify") {
      json b;
      OUTPOST_ASSIGN_OR_RETURN(b, ParseBody(req.body, {"model"}, {"model"}));
      *target = b["model"].get<std::string>();
      OUTPOST_RETURN_IF_ERROR(store->Verify(*target));
      models::ModelVersion v;
      OUTPOST_ASSIGN_OR_RETURN(v, store->Get(*target));
      return models::VersionJson(v);
    }
    if (*action == "activate") {
      json b;
      OUTPOST_ASSIGN_OR_RETURN(b, ParseBody(req.body, {"model", "force"}, {"model"}, {"force"}));
      *target = b["model"].get<std::string>();
      std::string name, version;
      if (Status st = models::ParseModelRef(*target, &name, &version); !st.ok()) {
        return Status::InvalidArgument(st.message(), "model");
      }
      if (b.contains("force") && !b["force"].is_boolean()) {
        return Status::InvalidArgument("'force' must be true or false", "force");
      }
      models::ModelLifecycle::Swap swap;
      OUTPOST_ASSIGN_OR_RETURN(swap, lifecycle_->Activate(*target, b.value("force", false)));
      return SwapJson(swap);
    }
    if (*action == "canary") {
      json b;
      OUTPOST_ASSIGN_OR_RETURN(
          b, ParseBody(req.body,
                       {"model", "steps", "bake", "min_requests", "max_ttft_ratio",
                        "max_error_increase", "min_decode_ratio", "shadow", "force"},
                       {"model"},
                       {"steps", "min_requests", "max_ttft_ratio", "max_error_increase",
                        "min_decode_ratio", "shadow", "force"}));
      if (b.contains("force") && !b["force"].is_boolean()) {
        return Status::InvalidArgument("'force' must be true or false", "force");
      }
      *target = b["model"].get<std::string>();
      std::string name, version;
      if (Status st = models::ParseModelRef(*target, &name, &version); !st.ok()) {
        return Status::InvalidArgument(st.message(), "model");
      }
      models::ModelLifecycle::CanaryPlan plan;
      OUTPOST_ASSIGN_OR_RETURN(plan, models::CanaryPlanFromJson(b));
      models::ModelLifecycle::CanaryStatus c;
      OUTPOST_ASSIGN_OR_RETURN(c, lifecycle_->StartCanary(*target, plan, b.value("force", false)));
      return CanaryJson(c);
    }
    if (*action == "promote") {
      json b;
      OUTPOST_ASSIGN_OR_RETURN(b, ParseBody(req.body, {"model"}, {"model"}));
      *target = b["model"].get<std::string>();
      models::ModelLifecycle::Swap swap;
      OUTPOST_ASSIGN_OR_RETURN(swap, lifecycle_->Promote(*target));
      return SwapJson(swap);
    }
    json b;
    OUTPOST_ASSIGN_OR_RETURN(b, ParseBody(req.body, {"model", "reason"}, {"model"}));
    *target = b["model"].get<std::string>();
    if (target->find(':') != std::string::npos) {
      return Status::InvalidArgument(
          "'model' names the model to roll back (NAME), not a version: it goes back to the "
          "version active before",
          "model");
    }
    models::ModelLifecycle::Swap swap;
    OUTPOST_ASSIGN_OR_RETURN(swap,
                             lifecycle_->Rollback(*target, b.value("reason", "asked by admin")));
    return SwapJson(swap);
  }
  if (path.rfind("/admin/models/", 0) == 0) {
    *target = path.substr(std::string("/admin/models/").size());
    if (get) {
      *action = "show";
      models::ModelVersion v;
      OUTPOST_ASSIGN_OR_RETURN(v, store->Get(*target));
      return models::VersionDetailJson(store, v);
    }
    if (req.method == "DELETE") {
      *action = "remove";
      for (const auto& l : lifecycle_->LoadedVersions()) {
        if (l.model + ":" + l.version == *target) {
          return Status::InvalidArgument(
              *target + " is loaded (" + l.role + "); activate or roll back to another first",
              "model");
        }
      }
      OUTPOST_RETURN_IF_ERROR(store->Remove(*target));
      return json{{"removed", *target}};
    }
    return Status::InvalidArgument("method " + req.method + " is not allowed on " + path, "method");
  }
  return Status::NotFound("no admin route for " + req.method + " " + path);
}

}  // namespace outpost::api

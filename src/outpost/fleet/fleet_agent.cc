#include "outpost/fleet/fleet_agent.h"

#include <httplib.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "outpost/models/canary_plan.h"
#include "outpost/models/oci_artifact.h"
#include "outpost/models/store_layout.h"
#include "outpost/router/registry_client.h"
#include "outpost/router/uplink_transport.h"
#include "outpost/util/file_io.h"
#include "outpost/util/sha256.h"
#include "outpost/util/status_macros.h"

namespace outpost::fleet {
namespace {

// A canary's figures in the observed state (step is 1-based; 0 in the shadow).
nlohmann::json CanaryFigures(const models::ModelLifecycle::CanaryStatus& c) {
  return {{"phase", c.phase}, {"percent", c.percent}, {"shadow_percent", c.shadow_percent},
          {"step", c.step},   {"steps", c.steps},     {"decision", c.last_decision}};
}

using nlohmann::json;

constexpr size_t kMaxDocumentBytes = 1 << 20;

bool IsPath(const std::string& s) {
  return s.rfind('/', 0) == 0 || s.rfind("file://", 0) == 0;
}

bool Retryable(const Status& st) {
  return st.code() == StatusCode::kUnavailable || st.code() == StatusCode::kCancelled ||
         st.code() == StatusCode::kResourceExhausted || st.code() == StatusCode::kUnauthenticated;
}

}  // namespace

FleetAgent::FleetAgent(models::ModelLifecycle* lifecycle, FleetOptions options,
                       telemetry::StatRegistry* stats)
    : lifecycle_(lifecycle),
      options_(std::move(options)),
      polls_(&stats->Register({"outpost_fleet_polls_total",
                               "Polls of the fleet's desired-state document by result: changed "
                               "(a new generation taken), unchanged, refused (bad signature, "
                               "document or generation), error (not fetched).",
                               telemetry::StatType::kCounter,
                               {"result"},
                               {}})),
      generation_(&stats->Register({"outpost_fleet_generation",
                                    "The desired-state generation this box converges to "
                                    "(kind=desired) and the last one it fully reached "
                                    "(kind=observed).",
                                    telemetry::StatType::kGauge,
                                    {"kind"},
                                    {}})) {
  json labels = json::object();
  for (const auto& [k, v] : options_.identity.labels) labels[k] = v;
  observed_ = {
      {"node", options_.node},
      {"site", options_.identity.site},
      {"labels", labels},
      {"generation", 0},
      {"observed_generation", 0},
      {"document", {{"source", options_.source}, {"etag", ""}, {"key", ""}, {"fetched", 0}}},
      {"models", json::array()},
      {"time", static_cast<int64_t>(std::time(nullptr))}};
}

FleetAgent::~FleetAgent() {
  Stop();
}

Status FleetAgent::Start() {
  if (options_.document_keys.empty()) {
    return Status::InvalidArgument(
        "fleet_url is set but no key may sign the desired state: set fleet_trusted_keys (or "
        "trusted_keys)",
        "fleet_trusted_keys");
  }
  const std::string& s = options_.source;
  if (s.rfind("https://", 0) != 0 && s.rfind("http://", 0) != 0 && s.rfind("oci://", 0) != 0 &&
      !IsPath(s)) {
    return Status::InvalidArgument(
        "fleet_url must be https://, http://, oci:// or an absolute path, got '" + s + "'",
        "fleet_url");
  }
  if (s.rfind("oci://", 0) == 0) {
    if (auto r = models::ParseOciReference(s); !r.ok()) {
      return Status::InvalidArgument("fleet_url: " + r.status().message(), "fleet_url");
    }
  }
  // The last good document, re-verified: the keys may have changed since.
  std::ifstream in(options_.state_file);
  if (in) {
    const json kept = json::parse(in, nullptr, false);
    if (kept.is_object() && kept.contains("envelope") && kept["envelope"].is_string()) {
      auto doc = VerifyDesiredState(kept["envelope"].get<std::string>(), options_.document_keys);
      if (doc.ok()) {
        current_ = std::move(doc).value();
        etag_ = kept.value("etag", "");
        observed_generation_ = kept.value("observed_generation", int64_t{0});
        if (kept.contains("tried") && kept["tried"].is_object()) {
          for (const auto& [ref, g] : kept["tried"].items()) {
            if (g.is_number_integer()) tried_[ref] = g.get<int64_t>();
          }
        }
        if (kept.contains("outcome") && kept["outcome"].is_object()) {
          for (const auto& [ref, o] : kept["outcome"].items()) {
            if (o.is_string()) outcome_[ref] = o.get<std::string>();
          }
        }
        spdlog::info("fleet: kept desired state generation {} (signed by {}) from {}",
                     current_->generation, current_->key_id, options_.state_file);
      } else {
        spdlog::warn("fleet: ignoring the kept desired state in {}: {}", options_.state_file,
                     doc.status().message());
      }
    }
  }
  spdlog::info("fleet: desired state from {} every {} ms; node '{}', site '{}'{}", options_.source,
               options_.interval_ms, options_.node, options_.identity.site,
               options_.report_url.empty() ? "" : "; observed state to " + options_.report_url);
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void FleetAgent::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void FleetAgent::Wake() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    wake_ = true;
  }
  cv_.notify_all();
}

json FleetAgent::Observed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return observed_;
}

void FleetAgent::Loop() {
  for (;;) {
    Cycle();
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(options_.interval_ms),
                 [&] { return stopping_ || wake_; });
    if (stopping_) return;
    wake_ = false;
  }
}

StatusOr<FleetAgent::Fetched> FleetAgent::Fetch() {
  const std::string& s = options_.source;
  if (IsPath(s)) {
    const std::string path = s.rfind("file://", 0) == 0 ? s.substr(7) : s;
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status::Unavailable("cannot read " + path);
    Fetched f;
    f.body.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (f.body.size() > kMaxDocumentBytes) {
      return Status::InvalidArgument(path + " is over 1 MiB", "document");
    }
    return f;
  }
  if (s.rfind("oci://", 0) == 0) return FetchOci();
  return FetchHttp();
}

StatusOr<FleetAgent::Fetched> FleetAgent::FetchHttp() {
  const std::string& url = options_.source;
  const size_t scheme_end = url.find("://");
  const size_t path_start = url.find('/', scheme_end + 3);
  const std::string base = path_start == std::string::npos ? url : url.substr(0, path_start);
  const std::string path = path_start == std::string::npos ? "/" : url.substr(path_start);
  httplib::Client cli(base);
  if (!cli.is_valid()) return Status::InvalidArgument("bad fleet_url " + url, "fleet_url");
  cli.set_connection_timeout(std::chrono::seconds(10));
  cli.set_read_timeout(std::chrono::seconds(30));
  if (!options_.token.empty()) cli.set_bearer_token_auth(options_.token);
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
  if (!options_.ca_file.empty()) cli.set_ca_cert_path(options_.ca_file);
#endif
  httplib::Headers h;
  if (!etag_.empty()) h.emplace("If-None-Match", etag_);
  Fetched f;
  // Redirects are not followed: cpp-httplib's redirect handling takes a
  // 304 for one (and fails without a Location). The head is looked at
  // first, so that only a 200 has its body read.
  int status = 0;
  auto res = cli.Get(
      path, h,
      [&](const httplib::Response& r) {
        status = r.status;
        f.etag = r.get_header_value("ETag");
        return status == 200;
      },
      [&](const char* data, size_t n) {
        f.body.append(data, n);
        return f.body.size() <= kMaxDocumentBytes;
      });
  if (status == 304) {
    f.unchanged = true;
    return f;
  }
  if (status != 0 && status != 200) {
    return Status::Unavailable("GET " + url + ": HTTP " + std::to_string(status) +
                               (status / 100 == 3 ? " (redirects are not followed: give fleet_url "
                                                    "the final URL)"
                                                  : ""));
  }
  if (f.body.size() > kMaxDocumentBytes) {
    return Status::InvalidArgument("GET " + url + ": the document is over 1 MiB", "document");
  }
  if (!res) {
    return Status::Unavailable("GET " + url + " failed: " + httplib::to_string(res.error()));
  }
  return f;
}

StatusOr<FleetAgent::Fetched> FleetAgent::FetchOci() {
  models::OciReference ref;
  OUTPOST_ASSIGN_OR_RETURN(ref, models::ParseOciReference(options_.source));
  router::RegistryOptions ro = options_.pull_defaults.registry;
  ro.manifest_attempts = 1;  // the next poll is the retry
  router::RegistryClient registry(ref, ro);
  router::RegistryClient::Manifest manifest;
  OUTPOST_ASSIGN_OR_RETURN(manifest, registry.FetchManifest());
  Fetched f;
  if (!etag_.empty() && manifest.digest == etag_) {
    f.unchanged = true;
    return f;
  }
  const json m = json::parse(manifest.body, nullptr, false);
  if (!m.is_object() || !m.contains("layers") || !m["layers"].is_array() || m["layers"].empty()) {
    return Status::InvalidArgument(options_.source + ": the manifest has no layers", "document");
  }
  const json* layer = nullptr;
  for (const auto& l : m["layers"]) {
    if (l.is_object() && l.value("mediaType", "") == kDesiredStateType) layer = &l;
  }
  if (layer == nullptr && m["layers"].size() == 1) layer = &m["layers"][0];
  if (layer == nullptr || !(*layer).contains("digest") || !(*layer)["digest"].is_string()) {
    return Status::InvalidArgument(
        options_.source + ": no layer of media type " + std::string(kDesiredStateType), "document");
  }
  const std::string digest = (*layer)["digest"].get<std::string>();
  Status st = registry.Get(
      registry.BlobUrl(digest), 0, "", [](const models::BlobSource::Head&) { return true; },
      [&](const char* data, size_t n) {
        f.body.append(data, n);
        return f.body.size() <= kMaxDocumentBytes;
      });
  if (!st.ok()) return st;
  if (util::Sha256Digest(f.body) != digest) {
    return Status::InvalidArgument(
        options_.source + ": the document's bytes are not its layer's digest " + digest,
        "document");
  }
  f.etag = manifest.digest;
  return f;
}

Status FleetAgent::Accept(const DesiredState& doc) {
  if (!current_) return Status::Ok();
  if (doc.generation < current_->generation) {
    return Status::InvalidArgument("generation " + std::to_string(doc.generation) +
                                       " is older than the one applied (" +
                                       std::to_string(current_->generation) + "); kept that",
                                   "generation");
  }
  if (doc.generation == current_->generation) {
    if (current_->payload != doc.payload) {
      return Status::InvalidArgument("generation " + std::to_string(doc.generation) +
                                         " again, with other content: a change needs a higher "
                                         "generation; kept the one applied",
                                     "generation");
    }
  }
  return Status::Ok();
}

void FleetAgent::Persist() {
  json tried = json::object(), outcome = json::object();
  for (const auto& [ref, g] : tried_) tried[ref] = g;
  for (const auto& [ref, o] : outcome_) outcome[ref] = o;
  const json kept = {{"envelope", current_ ? current_->envelope : ""},
                     {"etag", etag_},
                     {"observed_generation", observed_generation_},
                     {"tried", tried},
                     {"outcome", outcome}};
  if (Status st = util::WriteFileAtomically(options_.state_file, kept.dump(2) + "\n"); !st.ok()) {
    spdlog::warn("fleet: {}", st.message());
  }
}

void FleetAgent::Cycle() {
  std::string error;
  auto fetched = Fetch();
  std::string result;
  if (!fetched.ok()) {
    error = fetched.status().message();
    result = fetched.status().code() == StatusCode::kUnavailable ? "error" : "refused";
  } else if (fetched->unchanged) {
    result = "unchanged";
  } else {
    auto doc = VerifyDesiredState(fetched->body, options_.document_keys);
    Status ok = doc.ok() ? Accept(*doc) : doc.status();
    if (!ok.ok()) {
      error = ok.message();
      result = "refused";
    } else if (current_ && doc->generation == current_->generation) {
      result = "unchanged";
      etag_ = fetched->etag;
    } else {
      spdlog::info("fleet: desired state generation {} (was {}), signed by {}, {} entr{}",
                   doc->generation, current_ ? std::to_string(current_->generation) : "none",
                   doc->key_id, doc->models.size(), doc->models.size() == 1 ? "y" : "ies");
      current_ = std::move(doc).value();
      etag_ = fetched->etag;
      result = "changed";
      // Tries of earlier generations no longer hold anything back.
      for (auto it = tried_.begin(); it != tried_.end();) {
        if (it->second < current_->generation) {
          outcome_.erase(it->first);
          it = tried_.erase(it);
        } else {
          ++it;
        }
      }
    }
  }
  polls_->CounterWith({result}).Add();
  if (!error.empty()) {
    spdlog::warn("fleet: desired state from {} {}: {}{}", options_.source,
                 result == "error" ? "not fetched" : "refused", error,
                 current_ ? "; keeping generation " + std::to_string(current_->generation) : "");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    doc_error_ = error;
    if (result == "changed" || result == "unchanged") fetched_unix_ = std::time(nullptr);
  }
  std::vector<ModelStatus> models;
  if (current_) {
    bool all = true;
    for (const auto& want : SelectFor(*current_, options_.identity)) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) return;
      }
      models.push_back(Converge(want));
      all = all && models.back().phase == "converged";
    }
    if (all) observed_generation_ = current_->generation;
    Persist();
  }
  Publish(models);
}

FleetAgent::ModelStatus FleetAgent::Converge(const DesiredModel& want) {
  ModelStatus out;
  out.name = want.name;
  out.desired = want.Ref();
  models::ModelStore* store = lifecycle_->store();
  const int64_t gen = current_->generation;
  auto active = store->ActiveOf(want.name);
  if (active.ok()) out.active = active->version;
  std::optional<models::ModelLifecycle::CanaryStatus> canary;
  for (const auto& c : lifecycle_->Canaries()) {
    if (c.model == want.name) canary = c;
  }
  if (canary && canary->version != want.version) {
    spdlog::info("fleet: ending the canary of {}:{}: generation {} wants {}", want.name,
                 canary->version, gen, want.version);
    auto rb = lifecycle_->Rollback(
        want.name, "fleet: generation " + std::to_string(gen) + " wants " + want.version);
    if (!rb.ok()) spdlog::warn("fleet: {}", rb.status().message());
    canary.reset();
  }
  if (!canary && active.ok() && active->version == want.version) {
    out.phase = "converged";
    return out;
  }
  if (canary) {
    out.phase = "canary";
    out.canary = CanaryFigures(*canary);
    return out;
  }
  const std::string ref = want.Ref();
  if (auto t = tried_.find(ref); t != tried_.end() && t->second == gen) {
    // Tried in this generation and not serving: the lifecycle or an
    // operator turned it down. A new generation tries again.
    auto v = store->Get(ref);
    out.phase = v.ok() && v->state == "retired" ? "rolled_back" : "failed";
    out.message = outcome_[ref];
    if (v.ok() && !v->error.empty()) out.message = v->error;
    return out;
  }
  auto tried = [&](const std::string& phase, const std::string& message) {
    tried_[ref] = gen;
    outcome_[ref] = message;
    out.phase = phase;
    out.message = message;
    spdlog::warn("fleet: {} {}: {}", ref, phase, message);
    return out;
  };
  auto have = store->Get(ref);
  if (have.ok() && have->state != "failed" && have->state != "fetching") {
    // The name is taken: it must be the bytes the document pins.
    const std::string pin = want.sha256.empty() ? "" : "sha256:" + want.sha256;
    const size_t at = want.source.rfind("@sha256:");
    const std::string manifest = at == std::string::npos ? "" : want.source.substr(at + 1);
    if ((!pin.empty() && have->blob_digest != pin) ||
        (pin.empty() && !manifest.empty() && have->source.find(manifest) == std::string::npos)) {
      return tried("failed", ref + " in the store is other bytes (" + have->blob_digest + " from " +
                                 have->source +
                                 ") than the document pins; remove it or give "
                                 "another version");
    }
  }
  if (!have.ok() || have->state == "failed" || have->state == "fetching") {
    out.phase = "pulling";
    Publish({out});
    router::PullRequest pr = options_.pull_defaults;
    pr.source = want.source;
    pr.ref = ref;
    pr.sha256 = want.sha256;
    pr.signature_policy = options_.policies.For(want.source);
    if (!want.signature_policy.empty()) {
      pr.signature_policy = *models::ParseSignaturePolicy(want.signature_policy);
    }
    pr.pull.cancelled = [this] {
      std::lock_guard<std::mutex> lock(mu_);
      return stopping_;
    };
    spdlog::info("fleet: pulling {} from {} (generation {})", ref, want.source, gen);
    auto pulled = router::PullModel(store, pr);
    if (!pulled.ok()) {
      if (Retryable(pulled.status())) {
        out.phase = "pulling";
        out.message = pulled.status().message() + " (again at the next poll)";
        spdlog::warn("fleet: pull of {}: {}", ref, out.message);
        return out;
      }
      return tried("failed", "pull: " + pulled.status().message());
    }
  }
  if (want.canary && active.ok()) {
    auto started = lifecycle_->StartCanary(ref, *want.canary);
    if (!started.ok()) return tried("failed", "canary: " + started.status().message());
    tried_[ref] = gen;
    outcome_[ref] = "canary started";
    spdlog::info("fleet: canary of {} at {}% (generation {})", ref, started->percent, gen);
    out.phase = "canary";
    out.canary = CanaryFigures(*started);
    return out;
  }
  auto swap = lifecycle_->Activate(ref);
  if (!swap.ok()) return tried("failed", "activate: " + swap.status().message());
  tried_[ref] = gen;
  outcome_[ref] = "activated";
  spdlog::info("fleet: {} now serves {} (generation {})", want.name, want.version, gen);
  out.phase = "converged";
  out.active = want.version;
  return out;
}

void FleetAgent::Publish(const std::vector<ModelStatus>& models) {
  json list = json::array();
  for (const auto& m : models) {
    json j = {{"name", m.name}, {"desired", m.desired}, {"phase", m.phase}, {"active", m.active}};
    if (!m.message.empty()) j["message"] = m.message;
    if (!m.canary.is_null()) j["canary"] = m.canary;
    list.push_back(std::move(j));
  }
  json labels = json::object();
  for (const auto& [k, v] : options_.identity.labels) labels[k] = v;
  const int64_t desired = current_ ? current_->generation : 0;
  generation_->GaugeWith({"desired"}).Set(static_cast<double>(desired));
  generation_->GaugeWith({"observed"}).Set(static_cast<double>(observed_generation_));
  json observed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    json doc = {{"source", options_.source},
                {"etag", etag_},
                {"key", current_ ? current_->key_id : ""},
                {"fetched", fetched_unix_}};
    if (!doc_error_.empty()) doc["error"] = doc_error_;
    observed_ = {{"node", options_.node},
                 {"site", options_.identity.site},
                 {"labels", labels},
                 {"generation", desired},
                 {"observed_generation", observed_generation_},
                 {"document", doc},
                 {"models", list},
                 {"time", static_cast<int64_t>(std::time(nullptr))}};
    observed = observed_;
  }
  Report(observed);
}

void FleetAgent::Report(const json& observed) {
  if (options_.report_url.empty()) return;
  router::UplinkTransportOptions to;
  to.bearer_token = options_.token;
  to.tls_ca_file = options_.ca_file;
  to.gzip = false;
  to.timeout_ms = 10'000;
  router::HttpUplinkTransport transport(to);
  auto res = transport.Post(options_.report_url, observed.dump(), {});
  if (!res.error.empty() || res.status / 100 != 2) {
    spdlog::warn("fleet: observed state to {} not delivered: {}", options_.report_url,
                 res.error.empty() ? "HTTP " + std::to_string(res.status) : res.error);
  }
}

}  // namespace outpost::fleet

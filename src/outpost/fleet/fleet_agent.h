// FleetAgent — the node's side of GitOps for models: it polls the signed
// desired-state document (desired_state.h), converges this box to it
// through the same path an operator uses (pull → verify → canary or
// activate → promote; models/model_lifecycle.h), and posts what it
// observes back to the centre.
//
// Poll: every `interval`, the document is fetched from
//   https://… or http://…   with If-None-Match (304 = unchanged)
//   oci://host/repo:tag     an OCI artifact: the manifest's digest is the
//                           ETag; its layer of kDesiredStateType (else its
//                           only layer) is the envelope, checked against
//                           the layer's digest
//   a path                  read from the box (a USB stick, a mount)
// A document that is not signed by a trusted key, does not parse, or has a
// lower generation than the one already applied is refused and reported;
// one with the same generation but other content too ("bump the
// generation"). The last good document is kept on disk
// (<state_dir>/fleet-state.json) and re-verified at start: when the link is
// down, at start or later, the box keeps converging to it and never changes
// model because the centre is unreachable.
//
// Converge, per model name the document gives this node (SelectFor):
//   active version == desired         phase "converged"
//   a canary of the desired version   phase "canary" (the lifecycle's
//                                     evaluation promotes or aborts it)
//   a canary of another version       ended (rolled back), then as below
//   not in the store, or failed       phase "pulling": PullModel under the
//                                     entry's signature policy; a link
//                                     failure is retried next poll, a
//                                     refusal (digest, signature) is not
//   verified                          with a canary plan and an active
//                                     version: StartCanary; else Activate
// Each version is tried once per generation: a canary the lifecycle
// aborted, an activation that failed, or an operator's rollback is not
// undone by the agent until the centre publishes a new generation (phase
// "rolled_back" or "failed", with the reason). Models the document does not
// name are left alone.
//
// Observed state (Observed(), GET /admin/fleet, and POSTed as JSON to
// report_url after every poll):
//   {"node", "site", "labels", "generation" (the document converged to),
//    "observed_generation" (the last one fully converged), "document":
//    {"source", "etag", "key", "fetched", "error"}, "models": [{"name",
//    "desired", "phase", "active", "message", "canary"?}], "time"}
// Metrics: outpost_fleet_polls_total{result}, outpost_fleet_generation{kind}.
//
// Thread-safety: Start/Stop from one thread; Observed from any. The
// lifecycle must outlive the agent. Stop cancels a pull in progress (its
// bytes are kept) and waits for the operation under way.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "outpost/fleet/desired_state.h"
#include "outpost/models/model_lifecycle.h"
#include "outpost/models/model_signature.h"
#include "outpost/router/model_source.h"
#include "outpost/telemetry/stat_registry.h"
#include "outpost/util/thread_annotations.h"

namespace outpost::fleet {

struct FleetOptions {
  std::string source;  // the document: https://, http://, oci:// or a path
  int64_t interval_ms = 60'000;
  std::string node;                               // this box's name in reports
  NodeIdentity identity;                          // site and labels, for the selectors
  std::string report_url;                         // "" = no reports
  std::string token;                              // bearer token for the document and the reports
  std::string ca_file;                            // "" = the system's CAs
  std::vector<models::TrustedKey> document_keys;  // who may sign the document
  std::string state_file;                         // where the last good document is kept
  // Model pulls: registry options, saved logins, trusted model keys, the
  // node's signature policies and pull window (an entry's
  // signature_policy overrides the policy).
  router::PullRequest pull_defaults;
  models::SignaturePolicies policies;
};

class FleetAgent {
 public:
  FleetAgent(models::ModelLifecycle* lifecycle, FleetOptions options,
             telemetry::StatRegistry* stats);
  ~FleetAgent();  // Stop()

  // Reads the kept document (a bad or unverifiable one is warned about and
  // ignored) and starts polling. Errors: InvalidArgument (no document
  // keys, a bad source).
  Status Start();
  void Stop();
  // Polls now instead of at the next interval.
  void Wake();

  // What /admin/fleet shows and the report carries: node, site, labels,
  // generation, observed_generation, document, models, time. Before the first
  // poll has ended: the same object with generation 0 and no models.
  nlohmann::json Observed() const;

 private:
  struct Fetched {
    bool unchanged = false;
    std::string body, etag;
  };
  StatusOr<Fetched> Fetch();
  StatusOr<Fetched> FetchHttp();
  StatusOr<Fetched> FetchOci();
  // One poll: fetch, accept or refuse, converge, report.
  void Cycle();
  // Takes `doc` if it may replace the current one; else why not.
  Status Accept(const DesiredState& doc);
  void Persist();
  struct ModelStatus {
    std::string name, desired, phase, active, message;
    nlohmann::json canary;
  };
  ModelStatus Converge(const DesiredModel& want);
  void Publish(const std::vector<ModelStatus>& models);
  void Report(const nlohmann::json& observed);
  void Loop();

  models::ModelLifecycle* const lifecycle_;
  const FleetOptions options_;
  telemetry::Family* const polls_;
  telemetry::Family* const generation_;

  // The agent thread's own state.
  std::optional<DesiredState> current_;
  std::string etag_;
  int64_t observed_generation_ = 0;
  std::map<std::string, int64_t> tried_;        // version ref → generation it was tried in
  std::map<std::string, std::string> outcome_;  // version ref → what that try did

  mutable std::mutex mu_;
  nlohmann::json observed_ OUTPOST_GUARDED_BY(mu_);
  std::string doc_error_ OUTPOST_GUARDED_BY(mu_);
  int64_t fetched_unix_ OUTPOST_GUARDED_BY(mu_) = 0;
  bool stopping_ OUTPOST_GUARDED_BY(mu_) = false;
  bool wake_ OUTPOST_GUARDED_BY(mu_) = false;
  std::condition_variable cv_;
  std::thread thread_;
};

}  // namespace outpost::fleet

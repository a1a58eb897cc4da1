// Advisor — `outpost plan --advise`: where should a workload run? Cloud,
// on-premises, an edge box (or the device itself), or hybrid.
//
// The field's six questions, asked in order; each rule says what it decides
// and why, in numbers:
//   1. Immediacy     the cloud round trip + the cloud's time to first token
//                    against the response budget, and whether the network
//                    can be trusted at all → edge.
//   2. Data boundary device or site → edge; organisation → on-premises.
//   3. Intelligence  the model the task needs against what the candidate
//                    hardware holds (the planner's three gates); too big →
//                    cloud, or hybrid when most requests are easy.
//   4. Scale & cost  monthly cost of the cloud (per token) against the boxes
//                    that serve the same volume (price over lifetime + power);
//                    the crossover volume where the box becomes cheaper.
//   5. Updates       how often the model changes and whether the site can take
//                    the download; remote verified updates shorten the lag.
//   6. Offline       must keep working with no connection → edge.
// Combination: a data boundary that forbids the cloud settles it (edge, or
// on-premises for an organisation boundary); immediacy or offline pull to the
// edge, and with a need for bigger models than the box holds that is hybrid;
// otherwise intelligence, cost and updates vote, and when they disagree (or
// nothing decides) the answer is hybrid, the safe default.
//
// Pure functions over value types; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "outpost/planner/hardware.h"
#include "outpost/planner/planner.h"
#include "outpost/util/status.h"

namespace outpost::planner {

enum class Placement { kNone, kCloud, kOnPremises, kEdge, kHybrid };
// "cloud", "on-premises", "edge", "hybrid" ("none" for kNone).
const char* PlacementName(Placement p);

enum class DataBoundary { kNone, kOrganisation, kSite, kDevice };
const char* DataBoundaryName(DataBoundary b);
StatusOr<DataBoundary> ParseDataBoundary(const std::string& s);

// Everything the six questions need. Defaults are stated in docs/planning.md.
struct AdviseWorkload {
  std::string name = "workload";
  // 1. Immediacy
  double response_budget_ms = 2000;  // longest acceptable wait before the answer starts
  double cloud_rtt_ms = 100;         // measured round trip to the candidate cloud region
  double cloud_ttft_ms = 300;        // the cloud model's own time to first token
  bool network_reliable = true;
  double speed_kmh = 0;  // optional: how far a vehicle moves during the round trip
  // 2. Data
  DataBoundary boundary = DataBoundary::kNone;
  // 3. Intelligence
  double model_params = 1e9;        // size of the model the task needs
  double easy_share = 0;            // share of requests a small local model answers well
  double local_model_params = 3e9;  // that small local model, in a hybrid split
  // 4. Scale and cost
  double requests_per_day = 1000;
  double tokens_per_request = 1000;  // prompt + answer
  double cloud_usd_per_mtok = 1.0;   // blended price per million tokens
  double box_usd = 0;                // 0 = the class's typical price (assumption, stated)
  double box_lifetime_years = 4;
  double power_usd_per_kwh = 0.20;
  double utilisation = 0.3;  // share of a box's peak rate the day's traffic averages
  // 5. Updates
  double update_interval_days = 90;  // how often the model changes
  bool remote_updates = true;        // verified remote updates (Outpost's lifecycle)
  bool large_downloads = true;       // the site's link can take a model download
  // 6. Offline
  bool offline_required = false;
};

// Sets one field from its key and text, as the YAML and the flags write it
// ("response_budget", "150ms"). Errors name the key and what it expects.
Status SetAdviseField(AdviseWorkload* w, const std::string& key, const std::string& value);

// Reads a workload YAML (keys as in docs/planning.md: response_budget: 150ms,
// cloud_rtt: 80ms, data_boundary: organisation, model_size: 70B, ...). Errors
// name the file and the key.
StatusOr<AdviseWorkload> LoadAdviseWorkload(const std::string& path);

struct RuleResult {
  int number = 0;
  std::string question;  // "Immediacy"
  Placement decides = Placement::kNone;
  bool hard = false;  // a requirement, not a preference
  std::string why;
};

// One candidate box for the local part, through the planner's three gates.
struct LocalCandidate {
  PlanReport plan;
  bool passes = false;  // fit, speed and concurrency at the peak
  double box_usd = 0;   // price used (given or the class's typical)
  bool price_assumed = false;
  double capacity_tokens_per_day = 0;  // aggregate at the peak x 86400 x utilisation
};

struct CostModel {
  double local_share = 1;          // share of requests the boxes answer (easy_share in a split)
  double cloud_usd_per_month = 0;  // at the workload's volume
  double box_usd_per_month = 0;    // one box: price over lifetime + power
  double power_usd_per_month = 0;  // part of the above
  int boxes = 0;                   // boxes needed for the volume
  double local_usd_per_month = 0;  // boxes x box_usd_per_month
  double crossover_requests_per_day = 0;  // 0 = the box never gets cheaper
  std::string box;                        // the candidate costed
};

struct Advice {
  AdviseWorkload workload;
  ModelSpec model;  // the model the task needs
  // The model boxes would run: `model`, or in a hybrid split (the needed model
  // fits no edge hardware, most requests are easy) a small local model.
  ModelSpec local_model;
  std::vector<LocalCandidate> candidates;  // for local_model
  const LocalCandidate* chosen = nullptr;  // cheapest passing candidate (points into candidates)
  CostModel cost;
  std::vector<RuleResult> rules;  // six, in order
  Placement verdict = Placement::kHybrid;
  std::string summary;  // one sentence: why this verdict
};

// A Llama-3-shaped description of a model of `params` parameters at Q4_K_M
// (4.8 bits/weight), for when no GGUF is at hand.
ModelSpec TypicalModel(double params);

// Monthly cost of the cloud and of `boxes` boxes at a volume (pure arithmetic,
// pinned by tests). Box cost per month = price / (lifetime x 12) + power.
double CloudUsdPerMonth(const AdviseWorkload& w, double requests_per_day);
double BoxUsdPerMonth(const AdviseWorkload& w, double box_usd, double power_w);
double LocalUsdPerMonth(const AdviseWorkload& w, double requests_per_day, double box_usd_per_month,
                        double capacity_tokens_per_day);
// Boxes for `local_share` of the volume plus the cloud for the rest.
double SplitUsdPerMonth(const AdviseWorkload& w, double requests_per_day, double local_share,
                        double box_usd_per_month, double capacity_tokens_per_day);

// Runs the six rules. `hardware` are the candidates for the local part (all
// built-in profiles when empty); `model` is the model the task needs.
Advice Advise(const AdviseWorkload& w, const ModelSpec& model,
              const std::vector<HardwareProfile>& hardware, const Workload& serving,
              const Calibration& cal);

// A starting routing file for a hybrid (or edge with a central fallback)
// placement: what stays local, what goes central, the data-class rules.
std::string HybridRoutingYaml(const Advice& a);

}  // namespace outpost::planner

#include "outpost/app/advise_command.h"

#include <cstdio>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "outpost/planner/advice_report.h"
#include "outpost/planner/advisor.h"

namespace outpost::app {
namespace {

// Each workload key with its flag's help; the flag is --key-with-dashes
// (--workload-name for `name`, which names a described model in `plan`).
std::string FlagOf(const std::string& key) {
  if (key == "name") return "--workload-name";
  std::string flag = "--" + key;
  for (char& c : flag) c = c == '_' ? '-' : c;
  return flag;
}

const std::vector<std::pair<std::string, std::string>>& AdviseKeys() {
  static const auto* keys = new std::vector<std::pair<std::string, std::string>>{
      {"name", "advise: the workload's name in the report"},
      {"response_budget", "advise: longest acceptable wait before the answer starts (2s)"},
      {"cloud_rtt", "advise: measured round trip to the candidate cloud region (100ms)"},
      {"cloud_ttft", "advise: the cloud model's own time to first token (300ms)"},
      {"network", "advise: reliable | unreliable (reliable)"},
      {"speed", "advise: speed of a vehicle carrying the box, to show the distance (100km/h)"},
      {"data_boundary", "advise: where the data may go: device | site | organisation | none"},
      {"model_size", "advise: size of the model the task needs, when no --model (1B)"},
      {"easy_share", "advise: share of requests a small local model answers well (0%)"},
      {"requests_per_day", "advise: requests per day (1000; 2M)"},
      {"tokens_per_request", "advise: prompt + answer tokens per request (1000)"},
      {"cloud_price", "advise: cloud price in USD per million tokens (1.00)"},
      {"box_price", "advise: price of one box in USD (default: the class's typical price)"},
      {"box_lifetime", "advise: years a box serves (4)"},
      {"power_price", "advise: electricity in USD per kWh (0.20)"},
      {"utilisation", "advise: share of a box's peak rate the day averages (30%)"},
      {"update_interval", "advise: how often the model changes (daily, weekly, 90d)"},
      {"remote_updates", "advise: verified remote model updates available (true)"},
      {"large_downloads", "advise: the site's link can take a model download (true)"},
  };
  return *keys;
}

int Fail(const std::string& msg) {
  std::fprintf(stderr, "outpost plan --advise: %s\n", msg.c_str());
  return 2;
}

}  // namespace

void AddAdviseFlags(CLI::App* plan, AdviseFlags* f) {
  plan->add_flag("--advise", f->advise,
                 "advise where the workload should run: cloud, on-premises, edge or hybrid");
  plan->add_option("--workload", f->workload_file, "advise: workload YAML (docs/planning.md)");
  for (const auto& [key, help] : AdviseKeys()) {
    plan->add_option(FlagOf(key), f->fields[key], help);
  }
  plan->add_flag("--offline", f->offline, "advise: must keep working with no connection");
  plan->add_option("--routing-out", f->routing_out,
                   "advise: write the starting routing file of a hybrid verdict to FILE");
  plan->add_option("--svg", f->svg, "advise: write the cost crossover chart to FILE");
}

int RunAdvise(const AdviseFlags& f, const std::vector<planner::ModelSpec>& models,
              const std::vector<planner::HardwareProfile>& hardware,
              const planner::Workload& serving, const planner::Calibration& cal, bool json,
              const std::string& html) {
  planner::AdviseWorkload w;
  if (!f.workload_file.empty()) {
    auto loaded = planner::LoadAdviseWorkload(f.workload_file);
    if (!loaded.ok()) return Fail(loaded.status().message());
    w = *loaded;
  }
  for (const auto& [key, text] : f.fields) {
    if (text.empty()) continue;
    auto st = planner::SetAdviseField(&w, key, text);
    if (!st.ok()) {
      return Fail(FlagOf(key) + ": " + st.message());
    }
  }
  if (f.offline) w.offline_required = true;
  if (models.size() > 1)
    return Fail("give one --model (the model the task needs), not " +
                std::to_string(models.size()));
  const planner::ModelSpec model =
      models.empty() ? planner::TypicalModel(w.model_params) : models[0];
  const planner::Advice a = planner::Advise(w, model, hardware, serving, cal);

  if (json)
    std::cout << planner::AdviceJson(a).dump(2) << "\n";
  else
    std::cout << planner::AdviceText(a);
  auto write = [&](const std::string& path, const std::string& what,
                   const std::string& body) -> bool {
    std::ofstream out(path);
    if (!out) return false;
    out << body;
    if (!json) std::cout << "wrote " << what << " " << path << "\n";
    return static_cast<bool>(out);
  };
  if (!html.empty() && !write(html, "report", planner::AdviceHtml(a)))
    return Fail("--html: cannot write '" + html + "'");
  if (!f.svg.empty() && !write(f.svg, "cost chart", planner::CostChartSvg(a)))
    return Fail("--svg: cannot write '" + f.svg + "'");
  if (!f.routing_out.empty()) {
    if (a.verdict != planner::Placement::kHybrid && a.verdict != planner::Placement::kEdge) {
      if (!json)
        std::cout << "no routing file: the verdict is " << planner::PlacementName(a.verdict)
                  << "\n";
    } else if (!write(f.routing_out, "routing file", planner::HybridRoutingYaml(a))) {
      return Fail("--routing-out: cannot write '" + f.routing_out + "'");
    }
  }
  return 0;
}

}  // namespace outpost::app

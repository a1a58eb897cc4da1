// `outpost plan --advise`: where should this workload run (cloud,
// on-premises, edge box or hybrid), by the six rules of planner/advisor.h.
// The workload comes from a YAML file (--workload) and/or one flag per key;
// flags override the file.
#pragma once

#include <CLI/CLI.hpp>

#include <map>
#include <string>
#include <vector>

#include "outpost/planner/hardware.h"
#include "outpost/planner/planner.h"

namespace outpost::app {

struct AdviseFlags {
  bool advise = false;
  std::string workload_file;
  std::map<std::string, std::string> fields;  // workload key → text from its flag
  bool offline = false;
  std::string routing_out;  // hybrid: write the starting routing file here
  std::string svg;          // the cost chart alone
};

// Registers --advise and its flags on the `plan` subcommand.
void AddAdviseFlags(CLI::App* plan, AdviseFlags* f);

// Runs the advice. `models` holds at most the one model the task needs (empty:
// a typical model of model_size); `hardware` the candidates (empty: every
// built-in profile). Output: the table, or JSON with `json`; `html` if set.
int RunAdvise(const AdviseFlags& f, const std::vector<planner::ModelSpec>& models,
              const std::vector<planner::HardwareProfile>& hardware,
              const planner::Workload& serving, const planner::Calibration& cal, bool json,
              const std::string& html);

}  // namespace outpost::app

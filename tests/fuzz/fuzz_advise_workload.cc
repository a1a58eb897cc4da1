// libFuzzer: the `plan --advise` workload loader (planner/advisor.h) on
// arbitrary YAML, then the advice itself on what loaded: every outcome is an
// Advice or an error naming the key; no crash, no NaN verdict.
#include <cstddef>
#include <cstdint>

#include "fuzz_file.h"
#include "outpost/planner/advisor.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto w = outpost::planner::LoadAdviseWorkload(outpost::fuzz::WriteInput(data, size, ".yaml"));
  if (!w.ok()) return 0;
  outpost::planner::Workload serving;
  serving.peak_sessions = 4;
  const auto a = outpost::planner::Advise(*w, outpost::planner::TypicalModel(w->model_params), {},
                                          serving, {});
  if (a.rules.size() != 6) __builtin_trap();
  (void)outpost::planner::HybridRoutingYaml(a);
  return 0;
}

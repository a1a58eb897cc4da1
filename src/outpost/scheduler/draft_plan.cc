#include "outpost/scheduler/draft_plan.h"

#include <algorithm>
#include <cmath>
#include <queue>

#include "outpost/engine/kv_layout.h"

namespace outpost::scheduler {

StepCostTable::StepCostTable(int32_t max_rows)
    : seconds_(static_cast<size_t>(std::max(max_rows, 0)) + 1, 0.0), cost_(seconds_.size(), 0.0) {}

void StepCostTable::Observe(int32_t rows, double seconds) {
  if (rows <= 0 || static_cast<size_t>(rows) >= seconds_.size()) return;
  if (!(seconds > 0) || !std::isfinite(seconds)) return;
  double& s = seconds_[static_cast<size_t>(rows)];
  s = s == 0 ? seconds : (1 - kWeight) * s + kWeight * seconds;
  // cost_[r] = the least of the counts seen from b(r) up, b(r) the largest
  // count seen at or below r (0 = none).
  std::vector<double> least_from(seconds_.size() + 1, 0.0);
  for (size_t r = seconds_.size() - 1; r > 0; --r) {
    const double above = least_from[r + 1];
    least_from[r] = seconds_[r] > 0 && (above == 0 || seconds_[r] < above) ? seconds_[r] : above;
  }
  double at_below = least_from[1];  // below the smallest count seen: that count
  for (size_t r = 1; r < seconds_.size(); ++r) {
    if (seconds_[r] > 0) at_below = least_from[r];
    cost_[r] = at_below;
  }
}

std::optional<double> StepCostTable::Cost(int32_t rows) const {
  if (rows <= 0) return std::nullopt;
  const double c = cost_[std::min(static_cast<size_t>(rows), cost_.size() - 1)];
  if (c == 0) return std::nullopt;
  return c;
}

namespace {

// Time of the step's passes with `tokens` per sequence; empty when unknown.
std::optional<double> StepCost(const std::vector<int32_t>& tokens, const StepCostTable& costs) {
  double total = 0;
  for (int32_t rows : engine::BatchPasses(tokens)) {
    const std::optional<double> c = costs.Cost(rows);
    if (!c) return std::nullopt;
    total += *c;
  }
  return total;
}

}  // namespace

std::vector<int32_t> PlanDrafts(std::span<const int32_t> base_tokens,
                                const std::vector<DraftCandidate>& candidates,
                                const StepCostTable& costs) {
  std::vector<int32_t> keep(candidates.size(), 0);
  std::vector<int32_t> tokens(base_tokens.begin(), base_tokens.end());
  const std::optional<double> base = StepCost(tokens, costs);
  double sampled = 0;  // tokens the step yields without guesses: one a sequence
  for (int32_t t : base_tokens) sampled += t > 0 ? 1 : 0;
  if (!base || sampled == 0) return keep;
  std::vector<double> q(candidates.size());
  int32_t most = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    q[i] = std::clamp(candidates[i].acceptance, 0.0, 1.0);
    most = std::max(most, candidates[i].available);
  }
  double best_rate = sampled / *base;
  // The rate of a plan (guesses per candidate), and keeping the best.
  std::vector<int32_t> plan(candidates.size(), 0);
  const auto weigh = [&]() {
    double gain = 0;
    for (size_t i = 0; i < plan.size(); ++i) {
      double p = 1;
      for (int32_t j = 0; j < plan[i]; ++j) gain += (p *= q[i]);
      tokens[candidates[i].seq] = base_tokens[candidates[i].seq] + plan[i];
    }
    const std::optional<double> c = StepCost(tokens, costs);
    for (const DraftCandidate& d : candidates) tokens[d.seq] = base_tokens[d.seq];
    if (c && (sampled + gain) / *c > best_rate) {
      best_rate = (sampled + gain) / *c;
      keep = plan;
    }
  };
  // The same number for every sequence (one pass where all can take it) …
  for (int32_t k = 1; k <= most; ++k) {
    for (size_t i = 0; i < plan.size(); ++i) plan[i] = std::min(k, candidates[i].available);
    weigh();
  }
  // … and every prefix of the guesses in order of their expected tokens:
  // each sequence's next guess is worth q times its last, so a heap of one
  // entry per sequence merges them.
  struct Next {
    double gain;
    size_t i;
    bool operator<(const Next& o) const { return gain < o.gain || (gain == o.gain && i > o.i); }
  };
  std::priority_queue<Next> heap;
  std::fill(plan.begin(), plan.end(), 0);
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (candidates[i].available > 0 && q[i] > 0) heap.push({q[i], i});
  }
  while (!heap.empty()) {
    const Next n = heap.top();
    heap.pop();
    if (++plan[n.i] < candidates[n.i].available) heap.push({n.gain * q[n.i], n.i});
    weigh();
  }
  return keep;
}

double Acceptance(int32_t accepted, int32_t refused, double prior) {
  return (accepted + 2.0 * prior) / (accepted + refused + 2.0);
}

}  // namespace outpost::scheduler

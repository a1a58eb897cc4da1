#include "outpost/scheduler/draft_plan.h"

#include <algorithm>
#include <cmath>
#include <queue>

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
  double at_below = 0;
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

std::vector<int32_t> PlanDrafts(int32_t base_rows, const std::vector<DraftCandidate>& candidates,
                                const StepCostTable& costs) {
  std::vector<int32_t> keep(candidates.size(), 0);
  const std::optional<double> base = costs.Cost(base_rows);
  if (!base || base_rows <= 0) return keep;
  // Guesses in order of their expected tokens: each sequence's next guess
  // is worth q times its last, so a heap of one entry per sequence merges them.
  struct Next {
    double gain;
    size_t i;
    bool operator<(const Next& o) const { return gain < o.gain || (gain == o.gain && i > o.i); }
  };
  std::priority_queue<Next> heap;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const double q = std::clamp(candidates[i].acceptance, 0.0, 1.0);
    if (candidates[i].available > 0 && q > 0) heap.push({q, i});
  }
  std::vector<size_t> order;  // which sequence each kept guess belongs to
  double tokens = base_rows;
  double best = tokens / *base;
  size_t best_g = 0;
  std::vector<int32_t> taken(candidates.size(), 0);
  while (!heap.empty()) {
    const Next n = heap.top();
    heap.pop();
    order.push_back(n.i);
    tokens += n.gain;
    if (++taken[n.i] < candidates[n.i].available) {
      heap.push({n.gain * std::clamp(candidates[n.i].acceptance, 0.0, 1.0), n.i});
    }
    const std::optional<double> c = costs.Cost(base_rows + static_cast<int32_t>(order.size()));
    if (!c) break;
    const double rate = tokens / *c;
    if (rate > best) {
      best = rate;
      best_g = order.size();
    }
  }
  for (size_t g = 0; g < best_g; ++g) ++keep[order[g]];
  return keep;
}

double Acceptance(int32_t accepted, int32_t refused, double prior) {
  return (accepted + 2.0 * prior) / (accepted + refused + 2.0);
}

}  // namespace outpost::scheduler

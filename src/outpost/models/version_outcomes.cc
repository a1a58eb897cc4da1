#include "outpost/models/version_outcomes.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace outpost::models {

namespace {
constexpr size_t kKept = 4096;
}  // namespace

void VersionOutcomes::Record(bool error, bool cancelled, bool empty, int64_t tokens, double ttft_s,
                             double decode_s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (decode_s > 0 && tokens > 1 && !error && !cancelled) {
    totals_.decode_tokens += tokens - 1;
    totals_.decode_s += decode_s;
  }
  ++totals_.requests;
  totals_.errors += error ? 1 : 0;
  totals_.cancelled += cancelled ? 1 : 0;
  totals_.empty += empty && !error && !cancelled ? 1 : 0;
  totals_.tokens += tokens;
  if (ttft_s >= 0) {
    ttft_.push_back(ttft_s);
    if (ttft_.size() > kKept) ttft_.pop_front();
    ++totals_.ttft_seq;
  }
}

void VersionOutcomes::RecordComparison(bool same) {
  std::lock_guard<std::mutex> lock(mu_);
  ++totals_.compared;
  totals_.same += same ? 1 : 0;
}

void VersionOutcomes::RecordShadowSkipped() {
  std::lock_guard<std::mutex> lock(mu_);
  ++totals_.shadow_skipped;
}

VersionOutcomes::Snapshot VersionOutcomes::Since(Snapshot a, const Snapshot& b) {
  a.requests -= b.requests;
  a.errors -= b.errors;
  a.cancelled -= b.cancelled;
  a.empty -= b.empty;
  a.tokens -= b.tokens;
  a.compared -= b.compared;
  a.same -= b.same;
  a.shadow_skipped -= b.shadow_skipped;
  a.decode_tokens -= b.decode_tokens;
  a.decode_s -= b.decode_s;
  return a;
}

VersionOutcomes::Snapshot VersionOutcomes::Take() const {
  std::lock_guard<std::mutex> lock(mu_);
  return totals_;
}

double VersionOutcomes::TtftP95Since(const Snapshot& since) const {
  std::vector<double> v;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t n = std::min<uint64_t>(totals_.ttft_seq - since.ttft_seq, ttft_.size());
    v.assign(ttft_.end() - static_cast<std::ptrdiff_t>(n), ttft_.end());
  }
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(std::ceil(0.95 * static_cast<double>(v.size()))) - 1;
  return v[std::min(i, v.size() - 1)];
}

}  // namespace outpost::models

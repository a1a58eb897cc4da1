// VersionOutcomes — what the requests one loaded model version served came
// to, for the canary's comparison of a candidate against the active version.
// Recorded by the router's local target as each request ends; read by the
// lifecycle as snapshots, compared as differences between two of them.
// Thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>

#include "outpost/util/thread_annotations.h"

namespace outpost::models {

class VersionOutcomes {
 public:
  // One finished request: whether it failed (an error answer), was cut
  // (cancelled by a client), answered nothing, its generated tokens, its
  // time to first token (< 0: none came) and the time from its first token
  // to its end (< 0: not measured), over which the tokens after the first
  // were decoded.
  void Record(bool error, bool cancelled, bool empty, int64_t tokens, double ttft_s,
              double decode_s = -1);
  // Shadow phase (the candidate's outcomes only): a mirrored greedy request
  // whose answer was or was not the active version's, word for word; and a
  // request not mirrored because either version was busy.
  void RecordComparison(bool same);
  void RecordShadowSkipped();

  struct Snapshot {
    int64_t requests = 0;  // finished, of any outcome
    int64_t errors = 0;
    int64_t cancelled = 0;
    int64_t empty = 0;  // ended without error and without output
    int64_t tokens = 0;
    uint64_t ttft_seq = 0;  // TTFT samples recorded so far (for TtftP95Since)
    int64_t compared = 0;   // shadow: greedy answers compared with the active's
    int64_t same = 0;       // of which identical
    int64_t shadow_skipped = 0;
    int64_t decode_tokens = 0;  // tokens after the first, of requests with decode_s
    double decode_s = 0;        // their decode time
    // Decode rate in tokens/s; < 0 below `min_tokens` tokens (no verdict).
    double DecodeRate(int64_t min_tokens) const {
      return decode_tokens >= min_tokens && decode_s > 0 ? decode_tokens / decode_s : -1;
    }
  };
  // The counts of `a` since `b` (ttft_seq stays `a`'s).
  static Snapshot Since(Snapshot a, const Snapshot& b);
  Snapshot Take() const;
  // p95 of the TTFTs recorded after `since` (of the last 4096 kept); < 0
  // when there are none.
  double TtftP95Since(const Snapshot& since) const;

 private:
  mutable std::mutex mu_;
  Snapshot totals_ OUTPOST_GUARDED_BY(mu_);
  std::deque<double> ttft_ OUTPOST_GUARDED_BY(mu_);  // the newest 4096
};

}  // namespace outpost::models

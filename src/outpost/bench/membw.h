// STREAM-style memory bandwidth probe: multi-threaded read (sum) and triad
// (a = b + s*c) over arrays far larger than the caches; best of `reps`.
// Decode speed is bounded by this figure. Blocking; uses `threads` threads.
#pragma once

#include <cstddef>

namespace outpost::bench {

struct Bandwidth {
  double read_bytes_per_s = 0;
  double triad_bytes_per_s = 0;
  int threads = 0;
  size_t array_bytes = 0;
};

Bandwidth MeasureBandwidth(int threads, size_t total_mib, int reps);

}  // namespace outpost::bench

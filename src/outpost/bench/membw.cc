#include "outpost/bench/membw.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

namespace outpost::bench {
namespace {

using Clock = std::chrono::steady_clock;

template <typename F>
void Parallel(int threads, size_t n, F&& f) {
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    const size_t lo = n * t / threads, hi = n * (t + 1) / threads;
    ts.emplace_back([&f, t, lo, hi] { f(t, lo, hi); });
  }
  for (auto& t : ts) t.join();
}

template <typename F>
double BestSeconds(int reps, F&& f) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

}  // namespace

Bandwidth MeasureBandwidth(int threads, size_t total_mib, int reps) {
  threads = std::max(1, threads);
  const size_t n = total_mib * 1024 * 1024 / sizeof(double) / 3;
  std::vector<double> a(n), b(n), c(n);
  Parallel(threads, n, [&](int, size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) {
      a[i] = 1.0;
      b[i] = 2.0;
      c[i] = 0.5;
    }
  });
  std::vector<double> sums(static_cast<size_t>(threads));
  const double read_s = BestSeconds(reps, [&] {
    Parallel(threads, n, [&](int t, size_t lo, size_t hi) {
      double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      size_t i = lo;
      for (; i + 4 <= hi; i += 4) {
        s0 += b[i];
        s1 += b[i + 1];
        s2 += b[i + 2];
        s3 += b[i + 3];
      }
      for (; i < hi; ++i) s0 += b[i];
      sums[static_cast<size_t>(t)] = s0 + s1 + s2 + s3;
    });
  });
  const double triad_s = BestSeconds(reps, [&] {
    Parallel(threads, n, [&](int, size_t lo, size_t hi) {
      for (size_t i = lo; i < hi; ++i) a[i] = b[i] + 3.0 * c[i];
    });
  });
  // Keep the results observable so the loops are not optimised away.
  volatile double sink = sums[0] + a[n / 2];
  (void)sink;
  Bandwidth bw;
  bw.threads = threads;
  bw.array_bytes = n * sizeof(double);
  bw.read_bytes_per_s = static_cast<double>(n * sizeof(double)) / read_s;
  bw.triad_bytes_per_s = 3.0 * static_cast<double>(n * sizeof(double)) / triad_s;
  return bw;
}

}  // namespace outpost::bench

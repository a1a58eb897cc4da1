// membw — STREAM-style memory bandwidth: multi-threaded read (sum) and triad
// (a = b + s*c) over arrays far larger than the caches. Prints JSON with the
// best GB/s of several repetitions, the ceiling that bounds decode speed.
//
//   build/membw [--mib 1024] [--threads N] [--reps 5]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

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

template <typename F>
void Parallel(int threads, size_t n, F&& f) {
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    const size_t lo = n * t / threads, hi = n * (t + 1) / threads;
    ts.emplace_back([&f, lo, hi] { f(lo, hi); });
  }
  for (auto& t : ts) t.join();
}

}  // namespace

int main(int argc, char** argv) {
  size_t mib = 1024;
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  int reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--mib"))
      mib = std::strtoul(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--threads"))
      threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--reps"))
      reps = std::atoi(argv[i + 1]);
  }
  const size_t n = mib * 1024 * 1024 / sizeof(double) / 3;  // three arrays share the budget
  std::vector<double> a(n), b(n), c(n);
  Parallel(threads, n, [&](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) {
      a[i] = 1.0;
      b[i] = 2.0;
      c[i] = 0.5;
    }
  });

  std::vector<double> partial(static_cast<size_t>(threads));
  const double read_s = BestSeconds(reps, [&] {
    Parallel(threads, n, [&](size_t lo, size_t hi) {
      double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      size_t i = lo;
      for (; i + 4 <= hi; i += 4) {
        s0 += b[i];
        s1 += b[i + 1];
        s2 += b[i + 2];
        s3 += b[i + 3];
      }
      for (; i < hi; ++i) s0 += b[i];
      partial[lo * threads / n] = s0 + s1 + s2 + s3;
    });
  });
  const double triad_s = BestSeconds(reps, [&] {
    Parallel(threads, n, [&](size_t lo, size_t hi) {
      for (size_t i = lo; i < hi; ++i) a[i] = b[i] + 3.0 * c[i];
    });
  });
  double check = 0;
  for (double p : partial) check += p;
  const double bytes = static_cast<double>(n * sizeof(double));
  std::printf(
      "{\"threads\": %d, \"array_mib\": %.0f, \"read_gbps\": %.2f, \"triad_gbps\": %.2f, "
      "\"check\": %.0f}\n",
      threads, bytes / (1 << 20), bytes / read_s / 1e9, 3 * bytes / triad_s / 1e9,
      check + a[n / 2]);
  return 0;
}

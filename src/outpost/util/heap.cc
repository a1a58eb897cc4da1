#include "outpost/util/heap.h"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace outpost::util {

int LimitHeapArenas(int n) {
  if (const char* env = std::getenv("MALLOC_ARENA_MAX"); env != nullptr && *env != '\0')
    return std::atoi(env);
  if (n <= 0) return 0;
#if defined(__GLIBC__)
  return mallopt(M_ARENA_MAX, n) == 1 ? n : 0;
#else
  return 0;
#endif
}

HeapUsage ReadHeapUsage() {
  HeapUsage u;
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  const struct mallinfo2 mi = mallinfo2();
  u.in_use_bytes = mi.uordblks + mi.hblkhd;
  u.free_bytes = mi.fordblks;
#endif
  return u;
}

uint64_t ResidentAnonBytes() {
  std::ifstream f("/proc/self/status");
  std::string key;
  while (f >> key) {
    if (key == "RssAnon:") {
      uint64_t kib = 0;
      return f >> kib ? kib * 1024 : 0;
    }
    f.ignore(1 << 20, '\n');
  }
  return 0;
}

uint64_t ReleaseFreeHeap() {
#if defined(__GLIBC__)
  const uint64_t before = ResidentAnonBytes();
  if (malloc_trim(0) == 0) return 0;
  const uint64_t after = ResidentAnonBytes();
  return before > after ? before - after : 0;
#else
  return 0;
#endif
}

HeapReleaser::HeapReleaser(int64_t interval_ms, uint64_t min_free_bytes)
    : interval_ms_(interval_ms), min_free_bytes_(min_free_bytes) {}

HeapReleaser::~HeapReleaser() {
  Stop();
}

void HeapReleaser::Start() {
  if (interval_ms_ <= 0 || thread_.joinable()) return;
  thread_ = std::thread([this] { Run(); });
}

void HeapReleaser::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void HeapReleaser::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, std::chrono::milliseconds(interval_ms_), [this] { return stop_; })) {
    lock.unlock();
    if (ReadHeapUsage().free_bytes >= min_free_bytes_) {
      const uint64_t released = ReleaseFreeHeap();
      released_.fetch_add(released, std::memory_order_relaxed);
      releases_.fetch_add(1, std::memory_order_relaxed);
    }
    lock.lock();
  }
}

}  // namespace outpost::util

// The C heap (glibc malloc) as the process's resident memory sees it, and
// giving its free pages back to the kernel.
//
// glibc keeps memory that the program has freed: each of its arenas (up to 8
// per core, one per thread that allocated under contention) holds freed
// chunks for reuse, and returns to the kernel only what lies at the top of an
// arena past M_TRIM_THRESHOLD. With dozens of threads (HTTP workers, event
// loops, the engine, SQLite stores) allocating and freeing request-sized
// pieces, the resident set keeps creeping up while the memory in use is flat:
// a 4-minute soak grew 1.4 MiB of anonymous memory while heaptrack found
// 0.2 MiB more live allocations, spread over connections and requests in
// flight with no site accumulating. For a box
// whose admission budgets memory, resident memory that is only the
// allocator's cache is memory it cannot lend, and it hides a real leak.
// malloc_trim(0) hands every whole free page in every arena back
// (MADV_DONTNEED); HeapReleaser calls it on a timer when enough is held.
//
// The other half is how many arenas there are. glibc makes up to 8 per core
// (16 on a 2-core box), each keeping its own free chunks, so the same churn
// leaves free memory scattered over 16 heaps where no other thread reuses it.
// LimitHeapArenas caps them: with 2 on that soak, resident memory stayed
// within a 1.6 MiB band after the first minute (drift 0.32% over 4 minutes,
// against 0.6-1.2% with glibc's default).
//
// Linux/glibc; on another C library the reads return zeros and Release does
// nothing. Thread-safe (glibc locks each arena).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace outpost::util {

struct HeapUsage {
  // Allocated and not freed (arenas + mmapped chunks), including the chunks
  // glibc's per-thread caches (tcache) hold for reuse: it rises slowly as
  // more threads fill theirs, bounded by threads x cache size.
  uint64_t in_use_bytes = 0;
  uint64_t free_bytes = 0;  // freed, kept by the allocator (all arenas)
};

// mallopt(M_ARENA_MAX, n), unless the environment sets MALLOC_ARENA_MAX (the
// operator's word wins). Call before threads start; n <= 0 leaves glibc's
// default. Returns the cap in force (0 = glibc's default).
int LimitHeapArenas(int n);

// mallinfo2(): walks every arena's bins under its lock; microseconds.
HeapUsage ReadHeapUsage();

// Anonymous resident memory of this process (RssAnon in /proc/self/status:
// heap, stacks, anonymous mappings); 0 when unreadable.
uint64_t ResidentAnonBytes();

// malloc_trim(0); returns by how much the process's anonymous resident
// memory shrank over the call (0 when it did not; other threads allocating
// at the same time make it an estimate).
uint64_t ReleaseFreeHeap();

// A thread that every interval gives the heap's free memory back when the
// allocator holds at least min_free_bytes of it. Counts what it released.
class HeapReleaser {
 public:
  HeapReleaser(int64_t interval_ms, uint64_t min_free_bytes);
  ~HeapReleaser();  // Stop()s

  void Start();  // once; interval_ms <= 0: never starts
  void Stop();

  uint64_t released_bytes() const { return released_.load(std::memory_order_relaxed); }
  uint64_t releases() const { return releases_.load(std::memory_order_relaxed); }

 private:
  void Run();

  const int64_t interval_ms_;
  const uint64_t min_free_bytes_;
  std::atomic<uint64_t> released_{0};
  std::atomic<uint64_t> releases_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace outpost::util

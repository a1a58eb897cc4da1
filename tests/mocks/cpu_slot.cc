// A CPU of its own for each unit-test process that CTest runs side by side.
//
// CTest runs the unit tests `-j <CPUs>` at a time, one process per test (or
// per shard). A test on the real model starts llama.cpp's CPU threads, one per
// usable CPU (util/cpus.h), and those threads meet at a barrier after every
// operation: two such processes on two CPUs run four spinning threads on two
// cores, and each waits at every barrier for a thread that is not running — a
// 1 s sampler test took 25 s beside another model test (2026-12-07, this
// 2-vCPU box). Here, before main, a process whose environment names a lock
// directory in OUTPOST_UNIT_CPU_SLOTS takes the first CPU of its affinity mask
// that no other test process holds (an flock on `<dir>/cpu<N>.lock`, released
// by the kernel when the process exits, however it exits) and pins itself to
// it; UsableCpus() then counts 1 and llama.cpp runs one thread with no
// barrier to wait at. When every CPU is taken (more jobs than CPUs), or the
// variable is unset (a test binary run by hand, the TSan preset, whose races
// want real parallelism), nothing changes. A test that needs two threads
// really running at once (a team of llama.cpp threads it sets itself) calls
// UseEveryCpu() first.
#include "mocks/cpu_slot.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace outpost::testing {
namespace {

cpu_set_t g_every_cpu;  // the affinity mask the process started with
bool g_pinned = false;

void TakeACpuSlot() {
  const char* dir = std::getenv("OUTPOST_UNIT_CPU_SLOTS");
  if (dir == nullptr || *dir == '\0') return;
  cpu_set_t& mask = g_every_cpu;
  if (sched_getaffinity(0, sizeof(mask), &mask) != 0 || CPU_COUNT(&mask) < 2) return;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &mask)) continue;
    const std::string path = std::string(dir) + "/cpu" + std::to_string(cpu) + ".lock";
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      g_pinned = sched_setaffinity(0, sizeof(one), &one) == 0;
      return;  // fd stays open: the slot is held until the process exits
    }
    close(fd);
  }
}

// Runs before main, so before anything asks UsableCpus() (computed once).
const bool kSlotTaken = (TakeACpuSlot(), true);

}  // namespace

void UseEveryCpu() {
  if (g_pinned) sched_setaffinity(0, sizeof(g_every_cpu), &g_every_cpu);
}

}  // namespace outpost::testing

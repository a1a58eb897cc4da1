#include "outpost/telemetry/process_stats.h"

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "outpost/telemetry/stat_registry.h"
#include "outpost/util/heap.h"

namespace outpost::telemetry {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Field `n` (1-based, as proc(5) numbers them) of /proc/self/stat; the command
// name (field 2) may hold spaces, so counting starts after its ')'.
double StatField(int n) {
  std::ifstream f("/proc/self/stat");
  std::string line;
  if (!std::getline(f, line)) return kNaN;
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return kNaN;
  std::istringstream rest(line.substr(close + 2));
  std::string tok;
  for (int i = 3; rest >> tok; ++i) {
    if (i == n) return std::stod(tok);
  }
  return kNaN;
}

double BootTimeSeconds() {
  std::ifstream f("/proc/stat");
  std::string key;
  double v = 0;
  while (f >> key) {
    if (key == "btime" && f >> v) return v;
    f.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return kNaN;
}

Family& Declare(StatRegistry* r, const char* name, const char* help, StatType type) {
  return r->Register({name, help, type, {}, {}});
}

}  // namespace

void RegisterProcessMetrics(StatRegistry* r) {
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  Declare(r, "process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
          StatType::kCounter)
      .ComputedWith({}, [ticks] { return (StatField(14) + StatField(15)) / ticks; });
  Declare(r, "process_resident_memory_bytes", "Resident memory size in bytes.", StatType::kGauge)
      .ComputedWith({}, [page] { return StatField(24) * page; });
  Declare(r, "process_virtual_memory_bytes", "Virtual memory size in bytes.", StatType::kGauge)
      .ComputedWith({}, [] { return StatField(23); });
  Declare(r, "process_open_fds", "Number of open file descriptors.", StatType::kGauge)
      .ComputedWith({}, [] {
        std::error_code ec;
        double n = 0;
        for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
             !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
          ++n;
        return ec ? kNaN : n;
      });
  Declare(r, "process_max_fds", "Maximum number of open file descriptors.", StatType::kGauge)
      .ComputedWith({}, [] {
        rlimit lim{};
        return getrlimit(RLIMIT_NOFILE, &lim) == 0 ? static_cast<double>(lim.rlim_cur) : kNaN;
      });
  Family& heap =
      r->Register({"outpost_heap_bytes",
                   "The C heap: bytes allocated and in use (state=in_use), and freed but "
                   "kept by the allocator for reuse (state=free).",
                   StatType::kGauge,
                   {"state"},
                   {}});
  heap.ComputedWith({"in_use"},
                    [] { return static_cast<double>(util::ReadHeapUsage().in_use_bytes); });
  heap.ComputedWith({"free"}, [] { return static_cast<double>(util::ReadHeapUsage().free_bytes); });
  const double start = BootTimeSeconds() + StatField(22) / ticks;
  Declare(r, "process_start_time_seconds", "Start time of the process since the Unix epoch.",
          StatType::kGauge)
      .ComputedWith({}, [start] { return start; });
}

}  // namespace outpost::telemetry

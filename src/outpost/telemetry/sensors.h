// Hardware sensors (used by sustained benchmarks; next by the telemetry uplink): CPU temperature
// and clock from Linux thermal zones / hwmon / cpufreq, package power from RAPL, and NVIDIA GPU
// temperature, clock and power through NVML when the driver is present (libnvidia-ml is loaded at
// run time, so it is no build or run dependency). Readings that a platform does not offer are
// reported as absent (< 0). Not thread-safe: one Sensors per sampling thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace outpost::telemetry {

struct SensorSample {
  double cpu_temp_c = -1;   // hottest thermal zone / hwmon input
  double cpu_mhz = -1;      // mean current frequency over cores
  double cpu_power_w = -1;  // RAPL package power since the previous sample
  double gpu_temp_c = -1;
  double gpu_mhz = -1;
  double gpu_power_w = -1;
};

class Sensors {
 public:
  Sensors();
  ~Sensors();
  SensorSample Read();
  bool has_gpu() const { return nvml_ != nullptr; }
  // Which sources were found, for the report ("thermal_zone0, hwmon1, cpufreq, nvml").
  const std::string& sources() const { return sources_; }

 private:
  void* nvml_ = nullptr;  // dlopen handle
  void* gpu_ = nullptr;   // nvmlDevice_t
  uint64_t last_energy_uj_ = 0;
  std::chrono::steady_clock::time_point last_energy_at_;
  std::string sources_;
};

}  // namespace outpost::telemetry

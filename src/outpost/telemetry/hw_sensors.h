// HwSensors — every hardware sensor the box exposes, as metrics: temperatures,
// power and energy from Linux hwmon and thermal zones (an INA3221 on Jetson
// boards, ACPI zones), RAPL energy from powercap, thermal throttling counted by
// the CPU, CPU and devfreq clocks, and the GPU through NVML when the driver is
// present — temperature, power, energy, SM clock, utilisation and memory
// (libnvidia-ml is loaded at run time: no build or run dependency).
//
// Sensors are discovered once (Discover) under a sysfs root ("/sys"; tests
// point it at a fake tree) and read again on every scrape. A sensor that is
// absent or answers "not supported" is not reported at all — never as zero —
// and each source says whether it works in outpost_sensor_up{source}.
//
// Units as the kernel documents them (Documentation/hwmon/sysfs-interface):
// temperatures in millidegrees Celsius, power in microwatts, energy in
// microjoules, voltage in millivolts, current in milliamperes; NVML gives
// degrees, milliwatts and millijoules. Exposed in degrees, watts and joules.
//
// Thread-safety: a discovered HwSensors is read-only; reads may run on any
// thread (each reading opens its file).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace outpost::telemetry {

class StatRegistry;

enum class HwQuantity {
  kTemperature,
  kPower,
  kEnergy,
  kThrottleEvents,
  kClock,        // Hz: CPU cores (cpufreq), devfreq devices (Jetson GPU), NVML SM clock
  kUtilisation,  // 0..1: NVML GPU busy share
  kMemoryUsed,   // bytes: NVML GPU memory in use
  kMemoryTotal,  // bytes: NVML GPU memory
};

struct HwSensor {
  HwQuantity quantity = HwQuantity::kTemperature;
  std::string hw_id;    // "coretemp/Package id 0", "thermal_zone0", "ina3221/VDD_IN", "gpu0"
  std::string hw_type;  // "cpu", "gpu", "board", "memory", "power_rail"
  std::string source;   // hwmon, thermal_zone, cpu_throttle, rapl, cpufreq, devfreq, nvml
  // The current value in the exposed unit (degrees C, W, J, count); false when
  // the reading failed (the series is then skipped for that scrape).
  std::function<bool(double*)> read;
};

struct HwSource {
  std::string name;  // hwmon | thermal_zone | cpu_throttle | rapl | cpufreq | devfreq | nvml
  bool up = false;   // present and at least one sensor answered
};

class HwSensors {
 public:
  // Scans `sysfs_root`, and NVML through `nvml_library` ("" = no NVML; a
  // path loads that library instead of the driver's, as tests do).
  static constexpr const char* kNvmlLibrary = "libnvidia-ml.so.1";
  static std::unique_ptr<HwSensors> Discover(const std::string& sysfs_root = "/sys",
                                             const std::string& nvml_library = kNvmlLibrary);
  ~HwSensors();

  const std::vector<HwSensor>& sensors() const { return sensors_; }
  const std::vector<HwSource>& sources() const { return sources_; }

  // Registers outpost_hw_temperature_celsius, outpost_hw_power_watts,
  // outpost_hw_energy_joules_total, outpost_hw_throttle_events_total,
  // outpost_hw_clock_hertz, outpost_hw_utilization_ratio,
  // outpost_hw_memory_used_bytes, outpost_hw_memory_total_bytes and
  // outpost_sensor_up; values are read at scrape time. `this` must outlive
  // the registry's readers.
  void RegisterMetrics(StatRegistry* registry) const;

 private:
  HwSensors() = default;
  std::vector<HwSensor> sensors_;
  std::vector<HwSource> sources_;
  void* nvml_ = nullptr;  // dlopen handle, closed by the destructor
};

// The hw_type of a thermal zone or hwmon chip from its kernel name
// ("x86_pkg_temp" and "coretemp" → cpu, "GPU-therm" and "amdgpu" → gpu,
// "nvme" → storage, ...; unknown → "board"). Exposed for tests.
std::string HwTypeOf(const std::string& kernel_name);

}  // namespace outpost::telemetry

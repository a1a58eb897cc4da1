#include "outpost/telemetry/sensors.h"

#include <dlfcn.h>

#include <filesystem>
#include <fstream>

namespace outpost::telemetry {
namespace {

namespace fs = std::filesystem;

bool ReadNumber(const fs::path& p, double* out) {
  std::ifstream f(p);
  return static_cast<bool>(f >> *out);
}

// NVML entry points (C API; declared here to avoid a header dependency).
using NvmlInit = int (*)();
using NvmlShutdown = int (*)();
using NvmlGetHandle = int (*)(unsigned, void**);
using NvmlGetTemp = int (*)(void*, int, unsigned*);
using NvmlGetClock = int (*)(void*, int, unsigned*);
using NvmlGetPower = int (*)(void*, unsigned*);
constexpr int kNvmlTemperatureGpu = 0;
constexpr int kNvmlClockSm = 1;

}  // namespace

Sensors::Sensors() {
  void* h = dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (h) {
    auto init = reinterpret_cast<NvmlInit>(dlsym(h, "nvmlInit_v2"));
    auto get = reinterpret_cast<NvmlGetHandle>(dlsym(h, "nvmlDeviceGetHandleByIndex_v2"));
    void* dev = nullptr;
    if (init && get && init() == 0 && get(0, &dev) == 0) {
      nvml_ = h;
      gpu_ = dev;
      sources_ += "nvml ";
    } else {
      dlclose(h);
    }
  }
  std::error_code ec;
  if (fs::exists("/sys/class/thermal", ec)) sources_ += "thermal ";
  if (fs::exists("/sys/class/hwmon", ec)) sources_ += "hwmon ";
  if (fs::exists("/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq", ec))
    sources_ += "cpufreq ";
  if (fs::exists("/sys/class/powercap/intel-rapl:0/energy_uj", ec)) sources_ += "rapl ";
  if (sources_.empty()) sources_ = "none";
  Read();  // primes the energy counter
}

Sensors::~Sensors() {
  if (nvml_) {
    if (auto shut = reinterpret_cast<NvmlShutdown>(dlsym(nvml_, "nvmlShutdown"))) shut();
    dlclose(nvml_);
  }
}

SensorSample Sensors::Read() {
  SensorSample s;
  std::error_code ec;
  double v = 0;
  for (const auto& zone : fs::directory_iterator("/sys/class/thermal", ec)) {
    if (zone.path().filename().string().rfind("thermal_zone", 0) == 0 &&
        ReadNumber(zone.path() / "temp", &v)) {
      s.cpu_temp_c = std::max(s.cpu_temp_c, v / 1000.0);
    }
  }
  for (const auto& mon : fs::directory_iterator("/sys/class/hwmon", ec)) {
    for (int i = 1; i <= 16; ++i) {
      if (ReadNumber(mon.path() / ("temp" + std::to_string(i) + "_input"), &v)) {
        s.cpu_temp_c = std::max(s.cpu_temp_c, v / 1000.0);
      }
    }
  }
  double mhz_sum = 0;
  int cores = 0;
  for (int cpu = 0; cpu < 1024; ++cpu) {
    const fs::path p =
        "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/cpufreq/scaling_cur_freq";
    if (!ReadNumber(p, &v)) break;
    mhz_sum += v / 1000.0;
    ++cores;
  }
  if (cores == 0) {  // no cpufreq (VMs): /proc/cpuinfo reports the current clock
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line)) {
      if (line.rfind("cpu MHz", 0) == 0) {
        mhz_sum += std::stod(line.substr(line.find(':') + 1));
        ++cores;
      }
    }
  }
  if (cores > 0) s.cpu_mhz = mhz_sum / cores;
  if (ReadNumber("/sys/class/powercap/intel-rapl:0/energy_uj", &v)) {
    const auto now = std::chrono::steady_clock::now();
    const auto uj = static_cast<uint64_t>(v);
    if (last_energy_uj_ > 0 && uj >= last_energy_uj_) {
      const double dt = std::chrono::duration<double>(now - last_energy_at_).count();
      if (dt > 0) s.cpu_power_w = static_cast<double>(uj - last_energy_uj_) / 1e6 / dt;
    }
    last_energy_uj_ = uj;
    last_energy_at_ = now;
  }
  if (nvml_) {
    unsigned u = 0;
    if (auto f = reinterpret_cast<NvmlGetTemp>(dlsym(nvml_, "nvmlDeviceGetTemperature"));
        f && f(gpu_, kNvmlTemperatureGpu, &u) == 0)
      s.gpu_temp_c = u;
    if (auto f = reinterpret_cast<NvmlGetClock>(dlsym(nvml_, "nvmlDeviceGetClockInfo"));
        f && f(gpu_, kNvmlClockSm, &u) == 0)
      s.gpu_mhz = u;
    if (auto f = reinterpret_cast<NvmlGetPower>(dlsym(nvml_, "nvmlDeviceGetPowerUsage"));
        f && f(gpu_, &u) == 0)
      s.gpu_power_w = u / 1000.0;
  }
  return s;
}

}  // namespace outpost::telemetry

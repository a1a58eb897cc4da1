#include "outpost/telemetry/hw_sensors.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

#include "outpost/telemetry/stat_registry.h"

namespace outpost::telemetry {
namespace {

namespace fs = std::filesystem;

bool ReadNumber(const fs::path& p, double* out) {
  std::ifstream f(p);
  double v = 0;
  if (!(f >> v) || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

std::string ReadLine(const fs::path& p) {
  std::ifstream f(p);
  std::string s;
  std::getline(f, s);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Directory entries sorted by their number suffix (hwmon2 before hwmon10).
std::vector<fs::path> Numbered(const fs::path& dir, const std::string& prefix) {
  std::vector<std::pair<long, fs::path>> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string num = name.substr(prefix.size());
    if (num.empty() || !std::all_of(num.begin(), num.end(), ::isdigit)) continue;
    found.emplace_back(std::stol(num), e.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> out;
  for (auto& [n, p] : found) out.push_back(std::move(p));
  return out;
}

// A sysfs value file as a reading in the exposed unit.
std::function<bool(double*)> FileReading(fs::path path, double scale) {
  return [path = std::move(path), scale](double* v) {
    double raw = 0;
    if (!ReadNumber(path, &raw)) return false;
    *v = raw * scale;
    return true;
  };
}

// hwmon channels of one kind in a chip: "temp" → {1, 2, ...} for temp1_input, ...
std::vector<int> Channels(const fs::path& chip, const std::string& kind,
                          const std::string& suffix) {
  std::vector<int> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(chip, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(kind, 0) != 0) continue;
    const size_t us = name.find('_');
    if (us == std::string::npos || name.substr(us) != suffix) continue;
    const std::string num = name.substr(kind.size(), us - kind.size());
    if (num.empty() || !std::all_of(num.begin(), num.end(), ::isdigit)) continue;
    out.push_back(std::stoi(num));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// NVML, declared here (no header dependency). Return 0 = NVML_SUCCESS.
using NvmlInit = int (*)();
using NvmlShutdown = int (*)();
using NvmlCount = int (*)(unsigned*);
using NvmlGetHandle = int (*)(unsigned, void**);
using NvmlGetTemp = int (*)(void*, int, unsigned*);
using NvmlGetPower = int (*)(void*, unsigned*);
using NvmlGetEnergy = int (*)(void*, unsigned long long*);
using NvmlGetClock = int (*)(void*, int, unsigned*);
struct NvmlUtilization {
  unsigned gpu, memory;  // percent
};
using NvmlGetUtilization = int (*)(void*, NvmlUtilization*);
struct NvmlMemory {
  unsigned long long total, free, used;  // bytes
};
using NvmlGetMemory = int (*)(void*, NvmlMemory*);
constexpr int kNvmlTemperatureGpu = 0;
constexpr int kNvmlClockSm = 1;

}  // namespace

std::string HwTypeOf(const std::string& kernel_name) {
  const std::string n = Lower(kernel_name);
  auto has = [&](const char* s) { return n.find(s) != std::string::npos; };
  if (has("gpu") || has("amdgpu") || has("nouveau") || has("radeon")) return "gpu";
  if (has("x86_pkg") || has("coretemp") || has("k10temp") || has("zenpower") || has("cpu") ||
      has("soc") || has("acpitz"))
    return "cpu";
  if (has("nvme") || has("drivetemp")) return "storage";
  if (has("dimm") || has("jc42") || has("spd5118") || has("mem")) return "memory";
  if (has("ina3221") || has("ina2") || has("rapl")) return "power_rail";
  return "board";
}

HwSensors::~HwSensors() {
  if (nvml_ != nullptr) {
    if (auto shut = reinterpret_cast<NvmlShutdown>(dlsym(nvml_, "nvmlShutdown"))) shut();
    dlclose(nvml_);
  }
}

std::unique_ptr<HwSensors> HwSensors::Discover(const std::string& sysfs_root,
                                               const std::string& nvml_library) {
  std::unique_ptr<HwSensors> hw(new HwSensors());
  const fs::path root(sysfs_root);
  std::error_code ec;
  auto add_source = [&](const std::string& name, size_t before) {
    bool up = false;
    for (size_t i = before; i < hw->sensors_.size() && !up; ++i) {
      double v = 0;
      up = hw->sensors_[i].read(&v);
    }
    hw->sources_.push_back({name, up});
  };

  // Thermal zones: /sys/class/thermal/thermal_zoneN/{type,temp} (m°C).
  size_t before = hw->sensors_.size();
  for (const auto& zone : Numbered(root / "class/thermal", "thermal_zone")) {
    if (!fs::exists(zone / "temp", ec)) continue;
    const std::string type = ReadLine(zone / "type");
    hw->sensors_.push_back({HwQuantity::kTemperature,
                            zone.filename().string() + (type.empty() ? "" : "/" + type),
                            HwTypeOf(type), "thermal_zone", FileReading(zone / "temp", 1e-3)});
  }
  add_source("thermal_zone", before);

  // hwmon chips: tempN_input (m°C), powerN_input / powerN_average (µW),
  // energyN_input (µJ), and INA3221-style rails as inN_input (mV) x
  // currN_input (mA) when no power file exists.
  before = hw->sensors_.size();
  for (const auto& chip : Numbered(root / "class/hwmon", "hwmon")) {
    const std::string name = ReadLine(chip / "name");
    const std::string chip_id = name.empty() ? chip.filename().string() : name;
    const std::string type = HwTypeOf(name);
    auto label = [&](const std::string& kind, int ch) {
      const std::string l = ReadLine(chip / (kind + std::to_string(ch) + "_label"));
      return chip_id + "/" + (l.empty() ? kind + std::to_string(ch) : l);
    };
    for (int ch : Channels(chip, "temp", "_input")) {
      hw->sensors_.push_back({HwQuantity::kTemperature, label("temp", ch), type, "hwmon",
                              FileReading(chip / ("temp" + std::to_string(ch) + "_input"), 1e-3)});
    }
    std::vector<int> power = Channels(chip, "power", "_input");
    const bool average = power.empty();
    if (average) power = Channels(chip, "power", "_average");
    for (int ch : power) {
      const std::string file = "power" + std::to_string(ch) + (average ? "_average" : "_input");
      hw->sensors_.push_back({HwQuantity::kPower, label("power", ch), "power_rail", "hwmon",
                              FileReading(chip / file, 1e-6)});
    }
    for (int ch : Channels(chip, "energy", "_input")) {
      hw->sensors_.push_back(
          {HwQuantity::kEnergy, label("energy", ch), "power_rail", "hwmon",
           FileReading(chip / ("energy" + std::to_string(ch) + "_input"), 1e-6)});
    }
    if (power.empty()) {
      const std::vector<int> volts = Channels(chip, "in", "_input");
      for (int ch : Channels(chip, "curr", "_input")) {
        if (std::find(volts.begin(), volts.end(), ch) == volts.end()) continue;
        const fs::path v = chip / ("in" + std::to_string(ch) + "_input");
        const fs::path i = chip / ("curr" + std::to_string(ch) + "_input");
        std::string l = ReadLine(chip / ("in" + std::to_string(ch) + "_label"));
        if (l.empty()) l = "rail" + std::to_string(ch);
        hw->sensors_.push_back(
            {HwQuantity::kPower, chip_id + "/" + l, "power_rail", "hwmon", [v, i](double* out) {
               double mv = 0, ma = 0;
               if (!ReadNumber(v, &mv) || !ReadNumber(i, &ma)) return false;
               *out = mv * ma * 1e-6;
               return true;
             }});
      }
    }
  }
  add_source("hwmon", before);

  // Thermal throttling the CPU counted (x86: per package and per core).
  before = hw->sensors_.size();
  for (const auto& cpu : Numbered(root / "devices/system/cpu", "cpu")) {
    const fs::path t = cpu / "thermal_throttle";
    const std::string id = cpu.filename().string();
    if (fs::exists(t / "core_throttle_count", ec)) {
      hw->sensors_.push_back({HwQuantity::kThrottleEvents, id + "/core", "cpu", "cpu_throttle",
                              FileReading(t / "core_throttle_count", 1)});
    }
    if (id == "cpu0" && fs::exists(t / "package_throttle_count", ec)) {
      hw->sensors_.push_back({HwQuantity::kThrottleEvents, "package0", "cpu", "cpu_throttle",
                              FileReading(t / "package_throttle_count", 1)});
    }
  }
  add_source("cpu_throttle", before);

  // RAPL energy counters (powercap, µJ): intel-rapl:N (a package) and its
  // intel-rapl:N:M subzones (core, uncore, dram). Unreadable without root on
  // current kernels: then left out. The counter wraps at max_energy_range_uj,
  // which rate() reads as a counter reset.
  before = hw->sensors_.size();
  if (fs::is_directory(root / "class/powercap", ec)) {
    std::vector<fs::path> zones;
    for (const auto& e : fs::directory_iterator(root / "class/powercap", ec)) {
      const std::string n = e.path().filename().string();
      if (n.rfind("intel-rapl:", 0) == 0) zones.push_back(e.path());
    }
    std::sort(zones.begin(), zones.end());
    for (const auto& z : zones) {
      if (!fs::exists(z / "energy_uj", ec)) continue;
      const std::string name = ReadLine(z / "name");
      const std::string type = name == "dram" ? "memory" : name == "psys" ? "board" : "cpu";
      hw->sensors_.push_back({HwQuantity::kEnergy,
                              z.filename().string() + (name.empty() ? "" : "/" + name), type,
                              "rapl", FileReading(z / "energy_uj", 1e-6)});
    }
  }
  add_source("rapl", before);

  // Clocks: each CPU's current frequency (cpufreq, kHz), and devfreq devices
  // (a Jetson's GPU and memory controller, Hz).
  before = hw->sensors_.size();
  for (const auto& cpu : Numbered(root / "devices/system/cpu", "cpu")) {
    const fs::path f = cpu / "cpufreq/scaling_cur_freq";
    if (!fs::exists(f, ec)) continue;
    hw->sensors_.push_back(
        {HwQuantity::kClock, cpu.filename().string(), "cpu", "cpufreq", FileReading(f, 1e3)});
  }
  add_source("cpufreq", before);
  before = hw->sensors_.size();
  if (fs::is_directory(root / "class/devfreq", ec)) {
    std::vector<fs::path> devices;
    for (const auto& e : fs::directory_iterator(root / "class/devfreq", ec)) {
      devices.push_back(e.path());
    }
    std::sort(devices.begin(), devices.end());
    for (const auto& d : devices) {
      if (!fs::exists(d / "cur_freq", ec)) continue;
      const std::string name = d.filename().string();
      // The governor's device name says what it clocks ("17000000.gpu",
      // "17000000.ga10b" on Orin, "gv11b" on Xavier).
      std::string type = HwTypeOf(name);
      const std::string lower = Lower(name);
      if (lower.find("ga10b") != std::string::npos || lower.find("gv11b") != std::string::npos ||
          lower.find("gp10b") != std::string::npos) {
        type = "gpu";
      }
      hw->sensors_.push_back(
          {HwQuantity::kClock, name, type, "devfreq", FileReading(d / "cur_freq", 1)});
    }
  }
  add_source("devfreq", before);

  // NVIDIA GPUs through NVML: each query may answer NOT_SUPPORTED (Jetson),
  // in which case that sensor is not listed.
  if (!nvml_library.empty()) {
    before = hw->sensors_.size();
    void* h = dlopen(nvml_library.c_str(), RTLD_LAZY | RTLD_LOCAL);
    auto init = h ? reinterpret_cast<NvmlInit>(dlsym(h, "nvmlInit_v2")) : nullptr;
    if (init != nullptr && init() == 0) {
      hw->nvml_ = h;
      auto count = reinterpret_cast<NvmlCount>(dlsym(h, "nvmlDeviceGetCount_v2"));
      auto get = reinterpret_cast<NvmlGetHandle>(dlsym(h, "nvmlDeviceGetHandleByIndex_v2"));
      auto temp = reinterpret_cast<NvmlGetTemp>(dlsym(h, "nvmlDeviceGetTemperature"));
      auto power = reinterpret_cast<NvmlGetPower>(dlsym(h, "nvmlDeviceGetPowerUsage"));
      auto energy =
          reinterpret_cast<NvmlGetEnergy>(dlsym(h, "nvmlDeviceGetTotalEnergyConsumption"));
      auto clock = reinterpret_cast<NvmlGetClock>(dlsym(h, "nvmlDeviceGetClockInfo"));
      auto util = reinterpret_cast<NvmlGetUtilization>(dlsym(h, "nvmlDeviceGetUtilizationRates"));
      auto memory = reinterpret_cast<NvmlGetMemory>(dlsym(h, "nvmlDeviceGetMemoryInfo"));
      unsigned n = 0;
      if (count != nullptr && get != nullptr && count(&n) == 0) {
        for (unsigned d = 0; d < n && d < 16; ++d) {
          void* dev = nullptr;
          if (get(d, &dev) != 0) continue;
          const std::string id = "gpu" + std::to_string(d);
          unsigned u = 0;
          unsigned long long ull = 0;
          if (temp != nullptr && temp(dev, kNvmlTemperatureGpu, &u) == 0) {
            hw->sensors_.push_back(
                {HwQuantity::kTemperature, id, "gpu", "nvml", [temp, dev](double* v) {
                   unsigned c = 0;
                   if (temp(dev, kNvmlTemperatureGpu, &c) != 0) return false;
                   *v = c;
                   return true;
                 }});
          }
          if (power != nullptr && power(dev, &u) == 0) {
            hw->sensors_.push_back({HwQuantity::kPower, id, "gpu", "nvml", [power, dev](double* v) {
                                      unsigned mw = 0;
                                      if (power(dev, &mw) != 0) return false;
                                      *v = mw * 1e-3;
                                      return true;
                                    }});
          }
          if (energy != nullptr && energy(dev, &ull) == 0) {
            hw->sensors_.push_back(
                {HwQuantity::kEnergy, id, "gpu", "nvml", [energy, dev](double* v) {
                   unsigned long long mj = 0;
                   if (energy(dev, &mj) != 0) return false;
                   *v = static_cast<double>(mj) * 1e-3;
                   return true;
                 }});
          }
          if (clock != nullptr && clock(dev, kNvmlClockSm, &u) == 0) {
            hw->sensors_.push_back({HwQuantity::kClock, id, "gpu", "nvml", [clock, dev](double* v) {
                                      unsigned mhz = 0;
                                      if (clock(dev, kNvmlClockSm, &mhz) != 0) return false;
                                      *v = mhz * 1e6;
                                      return true;
                                    }});
          }
          NvmlUtilization ut{};
          if (util != nullptr && util(dev, &ut) == 0) {
            hw->sensors_.push_back(
                {HwQuantity::kUtilisation, id, "gpu", "nvml", [util, dev](double* v) {
                   NvmlUtilization r{};
                   if (util(dev, &r) != 0) return false;
                   *v = r.gpu / 100.0;
                   return true;
                 }});
          }
          NvmlMemory mem{};
          if (memory != nullptr && memory(dev, &mem) == 0) {
            hw->sensors_.push_back(
                {HwQuantity::kMemoryUsed, id, "gpu", "nvml", [memory, dev](double* v) {
                   NvmlMemory r{};
                   if (memory(dev, &r) != 0) return false;
                   *v = static_cast<double>(r.used);
                   return true;
                 }});
            hw->sensors_.push_back(
                {HwQuantity::kMemoryTotal, id, "gpu", "nvml", [memory, dev](double* v) {
                   NvmlMemory r{};
                   if (memory(dev, &r) != 0) return false;
                   *v = static_cast<double>(r.total);
                   return true;
                 }});
          }
        }
      }
    } else if (h != nullptr) {
      dlclose(h);
    }
    add_source("nvml", before);
  }
  return hw;
}

void HwSensors::RegisterMetrics(StatRegistry* registry) const {
  const std::vector<std::string> labels = {"hw_id", "hw_type", "source"};
  std::map<HwQuantity, Family*> families;
  families[HwQuantity::kTemperature] =
      &registry->Register({"outpost_hw_temperature_celsius",
                           "Hardware temperature (hwmon, thermal zones, NVML).",
                           StatType::kGauge,
                           labels,
                           {}});
  families[HwQuantity::kPower] = &registry->Register({"outpost_hw_power_watts",
                                                      "Power drawn by a rail, package or GPU.",
                                                      StatType::kGauge,
                                                      labels,
                                                      {}});
  families[HwQuantity::kEnergy] = &registry->Register({"outpost_hw_energy_joules_total",
                                                       "Energy consumed since the counter's start.",
                                                       StatType::kCounter,
                                                       labels,
                                                       {}});
  families[HwQuantity::kThrottleEvents] =
      &registry->Register({"outpost_hw_throttle_events_total",
                           "Thermal throttling events the CPU counted.",
                           StatType::kCounter,
                           labels,
                           {}});
  families[HwQuantity::kClock] =
      &registry->Register({"outpost_hw_clock_hertz",
                           "Current clock: CPU cores (cpufreq), devfreq devices, GPU SM clock.",
                           StatType::kGauge,
                           labels,
                           {}});
  families[HwQuantity::kUtilisation] =
      &registry->Register({"outpost_hw_utilization_ratio",
                           "Share of time the GPU was busy over its last sample period (0 to 1).",
                           StatType::kGauge,
                           labels,
                           {}});
  families[HwQuantity::kMemoryUsed] = &registry->Register(
      {"outpost_hw_memory_used_bytes", "GPU memory in use.", StatType::kGauge, labels, {}});
  families[HwQuantity::kMemoryTotal] = &registry->Register(
      {"outpost_hw_memory_total_bytes", "GPU memory in all.", StatType::kGauge, labels, {}});
  for (const HwSensor& s : sensors_) {
    families[s.quantity]->ComputedWith({s.hw_id, s.hw_type, s.source}, [read = s.read] {
      double v = 0;
      return read(&v) ? v : std::numeric_limits<double>::quiet_NaN();
    });
  }
  Family& up = registry->Register({"outpost_sensor_up",
                                   "1 when a sensor source is present and answers; 0 when it is "
                                   "absent or answers not supported (its readings are left out).",
                                   StatType::kGauge,
                                   {"source"},
                                   {}});
  for (const HwSource& src : sources_) up.GaugeWith({src.name}).Set(src.up ? 1 : 0);
}

}  // namespace outpost::telemetry

#include "outpost/telemetry/hw_sensors.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "outpost/telemetry/prometheus_text.h"
#include "outpost/telemetry/stat_registry.h"

namespace outpost::telemetry {
namespace {

namespace fs = std::filesystem;

// A fake sysfs tree with the kernel's file names and units.
class FakeSysfs {
 public:
  FakeSysfs() : root_(fs::path(testing::TempDir()) / ("sysfs-" + std::to_string(::getpid()))) {
    fs::remove_all(root_);
  }
  ~FakeSysfs() { fs::remove_all(root_); }
  void Write(const std::string& rel, const std::string& text) {
    const fs::path p = root_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text << "\n";
  }
  std::string root() const { return root_.string(); }

 private:
  fs::path root_;
};

std::map<std::string, double> Readings(const HwSensors& hw, HwQuantity q) {
  std::map<std::string, double> out;
  for (const auto& s : hw.sensors()) {
    double v = 0;
    if (s.quantity == q && s.read(&v)) out[s.source + ":" + s.hw_id] = v;
  }
  return out;
}

TEST(HwSensors, ReadsHwmonThermalZonesRailsAndThrottling) {
  FakeSysfs sys;
  sys.Write("class/thermal/thermal_zone0/type", "x86_pkg_temp");
  sys.Write("class/thermal/thermal_zone0/temp", "45000");
  sys.Write("class/thermal/thermal_zone1/type", "GPU-therm");
  sys.Write("class/thermal/thermal_zone1/temp", "51500");
  sys.Write("class/hwmon/hwmon0/name", "coretemp");
  sys.Write("class/hwmon/hwmon0/temp1_input", "52000");
  sys.Write("class/hwmon/hwmon0/temp1_label", "Package id 0");
  sys.Write("class/hwmon/hwmon0/temp2_input", "50000");
  // An INA3221 rail on a Jetson: 5 V x 1.2 A = 6 W.
  sys.Write("class/hwmon/hwmon1/name", "ina3221");
  sys.Write("class/hwmon/hwmon1/in1_label", "VDD_IN");
  sys.Write("class/hwmon/hwmon1/in1_input", "5000");
  sys.Write("class/hwmon/hwmon1/curr1_input", "1200");
  // A GPU chip with average power (µW) and an energy counter (µJ).
  sys.Write("class/hwmon/hwmon2/name", "amdgpu");
  sys.Write("class/hwmon/hwmon2/power1_average", "35000000");
  sys.Write("class/hwmon/hwmon2/energy1_input", "123000000");
  sys.Write("class/hwmon/hwmon2/temp1_input", "61000");
  sys.Write("devices/system/cpu/cpu0/thermal_throttle/core_throttle_count", "3");
  sys.Write("devices/system/cpu/cpu0/thermal_throttle/package_throttle_count", "7");
  sys.Write("devices/system/cpu/cpu1/thermal_throttle/core_throttle_count", "0");

  const auto hw = HwSensors::Discover(sys.root(), /*nvml_library=*/"");
  const auto temps = Readings(*hw, HwQuantity::kTemperature);
  EXPECT_DOUBLE_EQ(temps.at("thermal_zone:thermal_zone0/x86_pkg_temp"), 45.0);
  EXPECT_DOUBLE_EQ(temps.at("thermal_zone:thermal_zone1/GPU-therm"), 51.5);
  EXPECT_DOUBLE_EQ(temps.at("hwmon:coretemp/Package id 0"), 52.0);
  EXPECT_DOUBLE_EQ(temps.at("hwmon:coretemp/temp2"), 50.0);
  EXPECT_DOUBLE_EQ(temps.at("hwmon:amdgpu/temp1"), 61.0);
  const auto power = Readings(*hw, HwQuantity::kPower);
  EXPECT_DOUBLE_EQ(power.at("hwmon:ina3221/VDD_IN"), 6.0);
  EXPECT_DOUBLE_EQ(power.at("hwmon:amdgpu/power1"), 35.0);
  EXPECT_DOUBLE_EQ(Readings(*hw, HwQuantity::kEnergy).at("hwmon:amdgpu/energy1"), 123.0);
  const auto throttle = Readings(*hw, HwQuantity::kThrottleEvents);
  EXPECT_DOUBLE_EQ(throttle.at("cpu_throttle:package0"), 7);
  EXPECT_DOUBLE_EQ(throttle.at("cpu_throttle:cpu0/core"), 3);
  EXPECT_DOUBLE_EQ(throttle.at("cpu_throttle:cpu1/core"), 0);
  for (const auto& s : hw->sensors()) {
    if (s.hw_id == "thermal_zone1/GPU-therm") {
      EXPECT_EQ(s.hw_type, "gpu");
    }
    if (s.hw_id == "coretemp/Package id 0") {
      EXPECT_EQ(s.hw_type, "cpu");
    }
  }
  for (const auto& src : hw->sources()) {
    // This tree has no clocks: those sources are down, the rest up.
    EXPECT_EQ(src.up, src.name != "cpufreq" && src.name != "devfreq" && src.name != "rapl")
        << src.name;
  }
}

TEST(HwSensors, ReadsCpuAndDevfreqClocks) {
  FakeSysfs sys;
  sys.Write("devices/system/cpu/cpu0/cpufreq/scaling_cur_freq", "2400000");  // kHz
  sys.Write("devices/system/cpu/cpu1/cpufreq/scaling_cur_freq", "1200000");
  sys.Write("devices/system/cpu/cpu2/online", "1");                 // no cpufreq: no clock, not 0
  sys.Write("class/devfreq/17000000.ga10b/cur_freq", "918000000");  // Hz (Orin's GPU)
  sys.Write("class/devfreq/bpmp-emc/cur_freq", "3199000000");
  const auto hw = HwSensors::Discover(sys.root(), "");
  const auto clocks = Readings(*hw, HwQuantity::kClock);
  EXPECT_EQ(clocks.size(), 4u);
  EXPECT_DOUBLE_EQ(clocks.at("cpufreq:cpu0"), 2.4e9);
  EXPECT_DOUBLE_EQ(clocks.at("cpufreq:cpu1"), 1.2e9);
  EXPECT_DOUBLE_EQ(clocks.at("devfreq:17000000.ga10b"), 918e6);
  EXPECT_DOUBLE_EQ(clocks.at("devfreq:bpmp-emc"), 3199e6);
  for (const auto& s : hw->sensors()) {
    if (s.hw_id == "17000000.ga10b") {
      EXPECT_EQ(s.hw_type, "gpu");
    }
    if (s.hw_id == "cpu0") {
      EXPECT_EQ(s.hw_type, "cpu");
    }
  }
}

TEST(HwSensors, ReadsRaplEnergyAndLeavesOutWhatCannotBeRead) {
  FakeSysfs sys;
  sys.Write("class/powercap/intel-rapl:0/name", "package-0");
  sys.Write("class/powercap/intel-rapl:0/energy_uj", "123456789");
  sys.Write("class/powercap/intel-rapl:0:1/name", "dram");
  sys.Write("class/powercap/intel-rapl:0:1/energy_uj", "7000000");
  sys.Write("class/powercap/intel-rapl:1/name", "package-1");
  sys.Write("class/powercap/intel-rapl:1/energy_uj", "");           // unreadable (no root)
  sys.Write("class/powercap/intel-rapl-mmio:0/name", "package-0");  // another driver: skipped
  const auto hw = HwSensors::Discover(sys.root(), "");
  const auto energy = Readings(*hw, HwQuantity::kEnergy);
  EXPECT_EQ(energy.size(), 2u);
  EXPECT_DOUBLE_EQ(energy.at("rapl:intel-rapl:0/package-0"), 123.456789);
  EXPECT_DOUBLE_EQ(energy.at("rapl:intel-rapl:0:1/dram"), 7.0);
  for (const auto& s : hw->sensors()) {
    if (s.hw_id == "intel-rapl:0:1/dram") {
      EXPECT_EQ(s.hw_type, "memory");
    }
  }
}

TEST(HwSensors, NvmlThroughALoadedLibraryAndNotSupportedIsAbsent) {
  // The stand-in library (tests/mocks/fake_nvml.cc), loaded as the driver's is.
  FakeSysfs sys;
  const auto hw = HwSensors::Discover(sys.root(), OUTPOST_FAKE_NVML);
  StatRegistry reg;
  hw->RegisterMetrics(&reg);
  const std::string text = PrometheusText(reg.Snapshot());
  auto has = [&](const std::string& line) {
    EXPECT_NE(text.find(line + "\n"), std::string::npos) << line << "\n" << text;
  };
  const std::string gpu0 = "{hw_id=\"gpu0\",hw_type=\"gpu\",source=\"nvml\"}";
  has("outpost_hw_temperature_celsius" + gpu0 + " 65");
  has("outpost_hw_power_watts" + gpu0 + " 120.5");
  has("outpost_hw_energy_joules_total" + gpu0 + " 5000");
  has("outpost_hw_clock_hertz" + gpu0 + " 1410000000");
  has("outpost_hw_utilization_ratio" + gpu0 + " 0.37");
  has("outpost_hw_memory_used_bytes" + gpu0 + " 10737418240");
  has("outpost_hw_memory_total_bytes" + gpu0 + " 85899345920");
  // gpu1 answers NOT_SUPPORTED to all but its temperature: only that is there.
  has("outpost_hw_temperature_celsius{hw_id=\"gpu1\",hw_type=\"gpu\",source=\"nvml\"} 48");
  size_t gpu1 = 0;
  for (size_t at = text.find("hw_id=\"gpu1\""); at != std::string::npos;
       at = text.find("hw_id=\"gpu1\"", at + 1)) {
    ++gpu1;
  }
  EXPECT_EQ(gpu1, 1u) << text;
  has("outpost_sensor_up{source=\"nvml\"} 1");

  // A library that is not there: NVML is simply down.
  const auto none = HwSensors::Discover(sys.root(), "/nonexistent/libnvidia-ml.so.1");
  bool listed = false;
  for (const auto& src : none->sources()) {
    if (src.name == "nvml") {
      listed = true;
      EXPECT_FALSE(src.up);
    }
  }
  EXPECT_TRUE(listed);
}

TEST(HwSensors, AbsentOrBrokenSensorsAreLeftOutNeverZero) {
  FakeSysfs sys;
  sys.Write("class/hwmon/hwmon0/name", "broken");
  sys.Write("class/hwmon/hwmon0/temp1_input", "N/A");  // a driver that cannot read
  const auto hw = HwSensors::Discover(sys.root(), "");
  StatRegistry reg;
  hw->RegisterMetrics(&reg);
  const std::string text = PrometheusText(reg.Snapshot());
  EXPECT_EQ(text.find("outpost_hw_temperature_celsius{"), std::string::npos) << text;
  EXPECT_NE(text.find("outpost_sensor_up{source=\"hwmon\"} 0"), std::string::npos) << text;
  EXPECT_NE(text.find("outpost_sensor_up{source=\"thermal_zone\"} 0"), std::string::npos);

  // A sensor that disappears after discovery drops out of the next scrape.
  FakeSysfs sys2;
  sys2.Write("class/thermal/thermal_zone0/type", "acpitz");
  sys2.Write("class/thermal/thermal_zone0/temp", "40000");
  const auto hw2 = HwSensors::Discover(sys2.root(), "");
  StatRegistry reg2;
  hw2->RegisterMetrics(&reg2);
  EXPECT_NE(
      PrometheusText(reg2.Snapshot())
          .find("outpost_hw_temperature_celsius{hw_id=\"thermal_zone0/acpitz\",hw_type=\"cpu\","
                "source=\"thermal_zone\"} 40"),
      std::string::npos)
      << PrometheusText(reg2.Snapshot());
  sys2.Write("class/thermal/thermal_zone0/temp", "garbage");
  EXPECT_EQ(PrometheusText(reg2.Snapshot()).find("outpost_hw_temperature_celsius{"),
            std::string::npos);
}

TEST(HwSensors, TypesFromKernelNames) {
  EXPECT_EQ(HwTypeOf("x86_pkg_temp"), "cpu");
  EXPECT_EQ(HwTypeOf("k10temp"), "cpu");
  EXPECT_EQ(HwTypeOf("GPU-therm"), "gpu");
  EXPECT_EQ(HwTypeOf("nvme"), "storage");
  EXPECT_EQ(HwTypeOf("ina3221"), "power_rail");
  EXPECT_EQ(HwTypeOf("spd5118"), "memory");
  EXPECT_EQ(HwTypeOf("something"), "board");
}

}  // namespace
}  // namespace outpost::telemetry

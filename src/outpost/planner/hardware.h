// Hardware profiles for `outpost plan`: the figures that decide the three
// sizing gates — memory size, memory bandwidth, compute, power.
//
// Built-in profiles cover the four classes edge deployments choose from
// (embedded SoC with shared memory, mini PC / integrated GPU, one edge GPU
// card, rack GPU) with vendors' published figures; a YAML file can add more.
// Value types; pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "outpost/util/status.h"

namespace outpost::planner {

struct HardwareProfile {
  std::string name;           // key used on the command line ("jetson-orin-nano-8gb")
  std::string description;    // "NVIDIA Jetson Orin Nano 8GB"
  std::string device_class;   // "embedded-soc", "mini-pc", "edge-gpu", "rack-gpu", "custom"
  uint64_t memory_bytes = 0;  // memory the model can use (unified or VRAM)
  double bandwidth_bytes_per_s = 0;
  double tops = 0;       // dense INT8 tera-ops/s (or FP16 TFLOPS x 2 where INT8 is not published)
  double power_w = 0;    // typical board / card power
  std::string source;    // where the figures come from
  double price_usd = 0;  // typical street price of a complete box (an assumption; 0 = unknown)
};

const std::vector<HardwareProfile>& BuiltinProfiles();

// Finds a profile by name among `extra` (user file) first, then built-ins.
// Errors: NotFound listing the known names.
StatusOr<HardwareProfile> FindProfile(const std::string& name,
                                      const std::vector<HardwareProfile>& extra);

// Reads profiles from YAML: a list of mappings with keys name, description,
// class, memory ("16GiB"), bandwidth ("102GB/s"), tops, power ("25W").
// Errors name the entry and key.
StatusOr<std::vector<HardwareProfile>> LoadProfiles(const std::string& path);

// "102GB/s", "3.35TB/s", "900 GiB/s" → bytes/s.
StatusOr<double> ParseBandwidth(const std::string& text);
// "25W", "0.7kW", "25" → watts.
StatusOr<double> ParsePower(const std::string& text);

}  // namespace outpost::planner

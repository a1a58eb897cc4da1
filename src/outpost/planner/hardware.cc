#include "outpost/planner/hardware.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "outpost/util/units.h"
#include "outpost/util/yaml_file.h"

namespace outpost::planner {
namespace {

constexpr uint64_t kGiB = 1024ull * 1024 * 1024;
constexpr double kGBps = 1e9;

// Splits "102GB/s" into 102 and "gb/s".
bool SplitNumber(const std::string& text, double* v, std::string* unit) {
  const char* s = text.c_str();
  char* end = nullptr;
  *v = std::strtod(s, &end);
  if (end == s || !std::isfinite(*v)) return false;
  unit->clear();
  for (const char* p = end; *p; ++p) {
    if (!std::isspace(static_cast<unsigned char>(*p)))
      unit->push_back(static_cast<char>(std::tolower(*p)));
  }
  return true;
}

}  // namespace

const std::vector<HardwareProfile>& BuiltinProfiles() {
  // Published figures (vendor datasheets / spec pages). Memory is what a model
  // can use on the device: unified memory for SoCs and mini PCs, VRAM for cards.
  // The last figure is a typical 2026 street price of a complete box in USD —
  // an assumption for `plan --advise`'s cost rule, printed as one: developer
  // kits for the Jetsons, the card plus a $1,500 host for edge GPUs, the share
  // of one GPU in a server for rack GPUs.
  static const auto* profiles = new std::vector<HardwareProfile>{
      {"jetson-orin-nano-8gb", "NVIDIA Jetson Orin Nano 8GB", "embedded-soc", 8 * kGiB, 68 * kGBps,
       40, 15,
       "NVIDIA Jetson Orin Nano datasheet: 8 GB LPDDR5 128-bit, 68 GB/s, 40 INT8 sparse TOPS, 7-15 "
       "W",
       499},
      {"jetson-orin-nano-super", "NVIDIA Jetson Orin Nano Super 8GB", "embedded-soc", 8 * kGiB,
       102 * kGBps, 67, 25,
       "NVIDIA Jetson Orin Nano Super developer kit: 102 GB/s, 67 INT8 sparse TOPS, 25 W", 249},
      {"jetson-agx-orin-64gb", "NVIDIA Jetson AGX Orin 64GB", "embedded-soc", 64 * kGiB,
       204.8 * kGBps, 275, 60,
       "NVIDIA Jetson AGX Orin datasheet: 64 GB LPDDR5 256-bit, 204.8 GB/s, 275 INT8 sparse TOPS, "
       "15-60 W",
       1999},
      {"intel-nuc-ultra7", "Intel Core Ultra 7 155H mini PC, 32 GB DDR5-5600", "mini-pc", 32 * kGiB,
       89.6 * kGBps, 34, 28,
       "Intel ark: dual-channel DDR5-5600 (89.6 GB/s), 34 platform TOPS (CPU+GPU+NPU), 28 W base",
       900},
      {"amd-ryzen-ai-max-395", "AMD Ryzen AI Max+ 395 mini PC, 128 GB LPDDR5X-8000", "mini-pc",
       128 * kGiB, 256 * kGBps, 126, 120,
       "AMD spec: 256-bit LPDDR5X-8000 (256 GB/s), 126 platform TOPS, 45-120 W", 2000},
      {"apple-m4-pro-48gb", "Apple Mac mini M4 Pro, 48 GB", "mini-pc", 48 * kGiB, 273 * kGBps, 38,
       65, "Apple spec: 273 GB/s unified memory bandwidth, 38 TOPS Neural Engine", 1799},
      {"nvidia-l4", "NVIDIA L4 24GB", "edge-gpu", 24 * kGiB, 300 * kGBps, 485, 72,
       "NVIDIA L4 datasheet: 24 GB GDDR6, 300 GB/s, 485 INT8 TOPS (dense), 72 W", 4000},
      {"rtx-4000-ada", "NVIDIA RTX 4000 Ada Generation 20GB", "edge-gpu", 20 * kGiB, 360 * kGBps,
       306.8, 130,
       "NVIDIA RTX 4000 Ada datasheet: 20 GB GDDR6, 360 GB/s, 306.8 AI TFLOPS (FP8 sparse), 130 W",
       2800},
      {"nvidia-h100-sxm", "NVIDIA H100 SXM 80GB", "rack-gpu", 80 * kGiB, 3350 * kGBps, 1979, 700,
       "NVIDIA H100 datasheet: 80 GB HBM3, 3.35 TB/s, 1979 INT8 TOPS (dense), 700 W", 30000},
      {"nvidia-h200-sxm", "NVIDIA H200 SXM 141GB", "rack-gpu", 141ull * 1000 * 1000 * 1000,
       4800 * kGBps, 1979, 700,
       "NVIDIA H200 datasheet: 141 GB HBM3e, 4.8 TB/s, 1979 INT8 TOPS (dense), 700 W", 35000},
  };
  return *profiles;
}

StatusOr<HardwareProfile> FindProfile(const std::string& name,
                                      const std::vector<HardwareProfile>& extra) {
  for (const auto& p : extra) {
    if (p.name == name) return p;
  }
  for (const auto& p : BuiltinProfiles()) {
    if (p.name == name) return p;
  }
  std::string known;
  for (const auto& p : extra) known += (known.empty() ? "" : ", ") + p.name;
  for (const auto& p : BuiltinProfiles()) known += (known.empty() ? "" : ", ") + p.name;
  return Status::NotFound("unknown hardware profile '" + name + "' (known: " + known + ")",
                          "hardware");
}

StatusOr<double> ParseBandwidth(const std::string& text) {
  double v = 0;
  std::string u;
  if (!SplitNumber(text, &v, &u) || v <= 0) {
    return Status::InvalidArgument("'" + text + "' is not a positive bandwidth (e.g. 102GB/s)",
                                   "bandwidth");
  }
  if (u.size() > 2 && u.compare(u.size() - 2, 2, "/s") == 0) u.resize(u.size() - 2);
  if (u == "gb" || u.empty()) return v * 1e9;
  if (u == "tb") return v * 1e12;
  if (u == "mb") return v * 1e6;
  if (u == "gib") return v * static_cast<double>(kGiB);
  if (u == "tib") return v * static_cast<double>(kGiB) * 1024;
  return Status::InvalidArgument(
      "unknown bandwidth unit in '" + text + "' (use MB/s, GB/s, TB/s, GiB/s)", "bandwidth");
}

StatusOr<double> ParsePower(const std::string& text) {
  double v = 0;
  std::string u;
  if (!SplitNumber(text, &v, &u) || v < 0) {
    return Status::InvalidArgument("'" + text + "' is not a power (e.g. 25W)", "power");
  }
  if (u.empty() || u == "w") return v;
  if (u == "kw") return v * 1000;
  return Status::InvalidArgument("unknown power unit in '" + text + "' (use W or kW)", "power");
}

StatusOr<std::vector<HardwareProfile>> LoadProfiles(const std::string& path) {
  auto loaded = LoadYamlFile(path, "hardware", "hardware_file");
  if (!loaded.ok()) return loaded.status();
  const YAML::Node root = *loaded;
  if (!root.IsSequence()) {
    return Status::InvalidArgument(path + ": expected a list of hardware profiles",
                                   "hardware_file");
  }
  std::vector<HardwareProfile> out;
  for (size_t i = 0; i < root.size(); ++i) {
    const YAML::Node& n = root[i];
    const std::string where = path + " entry " + std::to_string(i + 1);
    if (!n.IsMap()) return Status::InvalidArgument(where + ": must be a mapping", "hardware_file");
    HardwareProfile p;
    p.device_class = "custom";
    for (const auto& kv : n) {
      const std::string key = kv.first.as<std::string>();
      const std::string val = kv.second.IsScalar() ? kv.second.as<std::string>() : "";
      if (key == "name") {
        p.name = val;
      } else if (key == "description") {
        p.description = val;
      } else if (key == "class") {
        p.device_class = val;
      } else if (key == "memory") {
        auto b = util::ParseBytes(val);
        if (!b.ok() || *b == 0)
          return Status::InvalidArgument(where + ": 'memory': '" + val + "' is not a size",
                                         "memory");
        p.memory_bytes = *b;
      } else if (key == "bandwidth") {
        auto b = ParseBandwidth(val);
        if (!b.ok())
          return Status::InvalidArgument(where + ": " + b.status().message(), "bandwidth");
        p.bandwidth_bytes_per_s = *b;
      } else if (key == "tops") {
        char* end = nullptr;
        p.tops = std::strtod(val.c_str(), &end);
        if (val.empty() || *end || p.tops <= 0) {
          return Status::InvalidArgument(
              where + ": 'tops' must be a positive number, got '" + val + "'", "tops");
        }
      } else if (key == "power") {
        auto w = ParsePower(val);
        if (!w.ok()) return Status::InvalidArgument(where + ": " + w.status().message(), "power");
        p.power_w = *w;
      } else if (key == "price") {
        char* end = nullptr;
        std::string t = val;
        if (!t.empty() && t[0] == '$') t.erase(0, 1);
        p.price_usd = std::strtod(t.c_str(), &end);
        if (t.empty() || *end || p.price_usd <= 0) {
          return Status::InvalidArgument(
              where + ": 'price' must be a positive number of USD, got '" + val + "'", "price");
        }
      } else if (key == "source") {
        p.source = val;
      } else {
        return Status::InvalidArgument(where + ": unknown key '" + key + "'", key);
      }
    }
    if (p.name.empty()) return Status::InvalidArgument(where + ": 'name' is required", "name");
    if (p.memory_bytes == 0)
      return Status::InvalidArgument(where + " (" + p.name + "): 'memory' is required", "memory");
    if (p.bandwidth_bytes_per_s <= 0) {
      return Status::InvalidArgument(where + " (" + p.name + "): 'bandwidth' is required",
                                     "bandwidth");
    }
    if (p.description.empty()) p.description = p.name;
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace outpost::planner

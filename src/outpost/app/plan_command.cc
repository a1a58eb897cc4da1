#include "outpost/app/plan_command.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "outpost/app/advise_command.h"
#include "outpost/app/config.h"
#include "outpost/engine/context.h"
#include "outpost/engine/model.h"
#include "outpost/engine/model_info.h"
#include "outpost/models/overhead_plan.h"
#include "outpost/planner/hardware.h"
#include "outpost/planner/planner.h"
#include "outpost/planner/report.h"
#include "outpost/util/units.h"

namespace outpost::app {

struct PlanFlags {
  std::vector<std::string> models;  // GGUF paths
  std::string name = "described model";
  std::string params, bits;
  int layers = 0, kv_heads = 0, head_dim = 0;
  std::vector<std::string> hardware;
  std::string hardware_file;
  std::string mem, bandwidth, power;
  double tops = 0;
  bool list_hardware = false;
  int context = 4096;
  int peak_sessions = 16;
  std::string kv_type = "f16";
  std::string headroom = "20%";
  std::string latency_budget = "100ms";
  int prompt_tokens = 512;
  int answer_tokens = 256;
  bool json = false;
  std::string html;
  std::string calibrate;
  AdviseFlags advise;
};

namespace {

// "7B", "270M", "1.5e9", "70000000000" → parameter count.
StatusOr<double> ParseCount(const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(v)) {
    return Status::InvalidArgument(
        "--params: '" + text + "' is not a parameter count (e.g. 7B, 270M)", "params");
  }
  std::string suf(end);
  if (suf == "B" || suf == "b")
    v *= 1e9;
  else if (suf == "M" || suf == "m")
    v *= 1e6;
  else if (suf == "K" || suf == "k")
    v *= 1e3;
  else if (!suf.empty())
    return Status::InvalidArgument("--params: unknown suffix '" + suf + "' (use K, M or B)",
                                   "params");
  if (v <= 0)
    return Status::InvalidArgument("--params must be positive, got '" + text + "'", "params");
  return v;
}

int Fail(const Status& st) {
  std::fprintf(stderr, "outpost plan: %s\n", st.message().c_str());
  return 2;
}

// A GGUF at hand: its shapes from the metadata, and the runtime `serve` would
// plan for it at this workload (models/overhead_plan.h: llama.cpp's dry run of
// the context at the peak, with serve's default settings).
StatusOr<planner::ModelSpec> SpecFromGguf(const std::string& path, const planner::Workload& w,
                                          engine::KvType kv_type) {
  auto info = engine::ReadModelInfo(path);
  if (!info.ok()) return info.status();
  planner::ModelSpec m;
  m.name = info->name;
  m.n_params = info->n_params;
  m.weight_bytes = info->weight_bytes;
  m.bits_per_weight =
      info->n_params ? 8.0 * static_cast<double>(info->weight_bytes) / info->n_params : 0;
  m.n_layers = info->n_layers;
  m.n_kv_heads = info->n_kv_heads;
  m.head_dim = (info->head_dim_k + info->head_dim_v) / 2;

  // serve's defaults (batch, threads, speculation off) from its own config.
  ServeConfig serve;
  serve.model = path;
  serve.ctx_size = w.context;
  const models::ModelRuntimeOptions cfg = ModelRuntimeOptionsFrom(serve);
  const auto overhead = models::OverheadPlan::For(cfg, *info, kv_type, w.peak_sessions);
  // Linear in sessions (a logits row each: speculation is off by default).
  m.runtime_bytes = overhead.BytesFor(0);
  m.runtime_bytes_per_session = overhead.BytesFor(1) - m.runtime_bytes;
  if (overhead.dry_run().ok()) {
    m.runtime_source = "llama.cpp's dry run: compute scratch " +
                       util::FormatNumber("%.1f MB", overhead.compute_bytes() / 1e6) +
                       ", a logits row per session, a runtime allowance of " +
                       util::FormatNumber("%.1f MB", engine::RuntimeAllowanceBytes(*info) / 1e6);
  } else {
    std::fprintf(stderr, "outpost plan: %s; runtime estimated from the model's shapes\n",
                 overhead.dry_run().message().c_str());
    m.runtime_source = "estimated from the model's shapes";
  }
  return m;
}

StatusOr<planner::Calibration> LoadCalibration(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("--calibrate: cannot read '" + path + "'", "calibrate");
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("calibration") ||
      !j["calibration"].is_object()) {
    return Status::InvalidArgument(
        "--calibrate: '" + path + "' is not an `outpost bench --json` report (no 'calibration')",
        "calibrate");
  }
  planner::Calibration c;
  c.decode_efficiency = j["calibration"].value("decode_efficiency", 0.0);
  c.prefill_efficiency = j["calibration"].value("prefill_efficiency", 0.0);
  c.source = path;
  if (!(c.decode_efficiency > 0 && c.decode_efficiency <= 1.5)) {
    return Status::InvalidArgument(
        "--calibrate: decode_efficiency in '" + path + "' is not in (0, 1.5]", "calibrate");
  }
  return c;
}

}  // namespace

std::shared_ptr<PlanFlags> AddPlanCommand(CLI::App* app) {
  auto shared = std::make_shared<PlanFlags>();
  PlanFlags* f = shared.get();
  CLI::App* c = app->add_subcommand(
      "plan", "predict fit, speed and users for a model on hardware (no weights loaded)");
  c->add_option("-m,--model", f->models, "GGUF file(s); several compare models on one profile");
  c->add_option("--name", f->name, "name for a described model");
  c->add_option("--params", f->params, "described model: parameter count (7B, 270M)");
  c->add_option("--bits", f->bits, "described model: bits per weight (4.5 for Q4_K_M, 8, 16)");
  c->add_option("--layers", f->layers, "described model: transformer layers");
  c->add_option("--kv-heads", f->kv_heads, "described model: KV heads");
  c->add_option("--head-dim", f->head_dim, "described model: head dimension");
  c->add_option("--hardware", f->hardware,
                "hardware profile name(s); several compare profiles (see --list-hardware)");
  c->add_option("--hardware-file", f->hardware_file, "YAML file with more hardware profiles");
  c->add_option("--mem", f->mem, "custom hardware: memory (16GiB)");
  c->add_option("--bandwidth", f->bandwidth, "custom hardware: memory bandwidth (102GB/s)");
  c->add_option("--tops", f->tops, "custom hardware: INT8 TOPS");
  c->add_option("--power", f->power, "custom hardware: power (25W)");
  c->add_flag("--list-hardware", f->list_hardware, "list the hardware profiles and exit");
  c->add_option("--context", f->context, "tokens per session (default 4096)");
  c->add_option("--peak-sessions", f->peak_sessions,
                "concurrent sessions at the peak (default 16)");
  c->add_option("--kv-type", f->kv_type, "KV cache type: f16, q8_0, q4_0 (default f16)");
  c->add_option("--headroom", f->headroom, "memory headroom on top of the peak (default 20%)");
  c->add_option("--latency-budget", f->latency_budget,
                "max time per generated token (default 100ms)");
  c->add_option("--prompt-tokens", f->prompt_tokens,
                "prompt length for time to first token (default 512)");
  c->add_option("--answer-tokens", f->answer_tokens, "answer length for queue waits (default 256)");
  c->add_flag("--json", f->json, "print JSON instead of the table");
  c->add_option("--html", f->html, "also write an HTML report with charts to FILE");
  c->add_option("--calibrate", f->calibrate,
                "use the efficiency measured in an `outpost bench --json` report");
  AddAdviseFlags(c, &f->advise);
  return shared;
}

int RunPlan(const PlanFlags& f) {
  std::vector<planner::HardwareProfile> extra;
  if (!f.hardware_file.empty()) {
    auto p = planner::LoadProfiles(f.hardware_file);
    if (!p.ok()) return Fail(p.status());
    extra = std::move(p).value();
  }
  if (f.list_hardware) {
    std::printf("%-24s %-14s %9s %10s %8s %7s  %s\n", "name", "class", "memory", "bandwidth",
                "TOPS", "power", "description");
    auto print = [](const planner::HardwareProfile& p) {
      std::printf("%-24s %-14s %6.0f GB %6.0f GB/s %8.0f %5.0f W  %s\n", p.name.c_str(),
                  p.device_class.c_str(), p.memory_bytes / 1e9, p.bandwidth_bytes_per_s / 1e9,
                  p.tops, p.power_w, p.description.c_str());
    };
    for (const auto& p : extra) print(p);
    for (const auto& p : planner::BuiltinProfiles()) print(p);
    return 0;
  }

  // Models: GGUFs (read below, once the workload is known) and/or one described model.
  std::optional<planner::ModelSpec> described;
  if (!f.params.empty() || !f.bits.empty()) {
    auto n = ParseCount(f.params);
    if (!n.ok()) return Fail(n.status());
    char* end = nullptr;
    const double bits = std::strtod(f.bits.c_str(), &end);
    if (f.bits.empty() || *end)
      return Fail(Status::InvalidArgument("--bits must be a number, got '" + f.bits + "'"));
    auto m = planner::DescribeModel(f.name, *n, bits, f.layers, f.kv_heads, f.head_dim);
    if (!m.ok()) return Fail(Status::InvalidArgument("described model: " + m.status().message()));
    described = std::move(m).value();
  }
  if (!described && f.models.empty() && !f.advise.advise)
    return Fail(
        Status::InvalidArgument("give --model FILE.gguf or describe one with --params --bits "
                                "--layers --kv-heads --head-dim"));

  // Hardware: named profiles and/or custom numbers.
  std::vector<planner::HardwareProfile> hws;
  for (const auto& name : f.hardware) {
    auto p = planner::FindProfile(name, extra);
    if (!p.ok()) return Fail(p.status());
    hws.push_back(std::move(p).value());
  }
  if (!f.mem.empty() || !f.bandwidth.empty()) {
    planner::HardwareProfile p;
    p.name = "custom";
    p.description = "custom hardware";
    p.device_class = "custom";
    auto mem = util::PositiveBytesFlag("--mem", f.mem);
    if (!mem.ok()) return Fail(mem.status());
    p.memory_bytes = *mem;
    auto bw = planner::ParseBandwidth(f.bandwidth);
    if (!bw.ok()) return Fail(Status::InvalidArgument("--bandwidth: " + bw.status().message()));
    p.bandwidth_bytes_per_s = *bw;
    if (f.tops < 0) return Fail(Status::InvalidArgument("--tops must not be negative"));
    p.tops = f.tops;
    if (!f.power.empty()) {
      auto w = planner::ParsePower(f.power);
      if (!w.ok()) return Fail(Status::InvalidArgument("--power: " + w.status().message()));
      p.power_w = *w;
    }
    hws.push_back(p);
  }
  if (hws.empty() && !f.advise.advise)
    return Fail(Status::InvalidArgument(
        "give --hardware NAME (see --list-hardware) or --mem and --bandwidth"));

  planner::Workload w;
  if (f.context <= 0) return Fail(Status::InvalidArgument("--context must be positive"));
  if (f.peak_sessions <= 0)
    return Fail(Status::InvalidArgument("--peak-sessions must be positive"));
  if (f.prompt_tokens < 0 || f.answer_tokens <= 0)
    return Fail(Status::InvalidArgument("--prompt-tokens must be >= 0 and --answer-tokens > 0"));
  w.context = f.context;
  w.peak_sessions = f.peak_sessions;
  w.prompt_tokens = f.prompt_tokens;
  w.answer_tokens = f.answer_tokens;
  auto kv = engine::ParseKvType(f.kv_type);
  if (!kv.ok()) return Fail(Status::InvalidArgument("--kv-type: " + kv.status().message()));
  w.kv_type = f.kv_type;
  w.kv_bytes_per_element = engine::KvBytesPerElement(*kv);
  {
    std::string h = f.headroom;
    const bool pct = !h.empty() && h.back() == '%';
    if (pct) h.pop_back();
    char* end = nullptr;
    double v = std::strtod(h.c_str(), &end);
    if (h.empty() || *end || v < 0)
      return Fail(Status::InvalidArgument("--headroom: '" + f.headroom +
                                          "' is not a percentage (20%) or fraction (0.2)"));
    w.headroom = pct ? v / 100 : v;
  }
  auto lb = util::PositiveDurationMsFlag("--latency-budget", f.latency_budget);
  if (!lb.ok()) return Fail(lb.status());
  w.latency_budget_ms = static_cast<double>(*lb);

  // llama.cpp's errors to stderr (the dry run's load warnings are debug).
  if (!f.models.empty()) engine::InstallLlamaLogger(false);
  std::vector<planner::ModelSpec> models;
  for (const auto& path : f.models) {
    auto m = SpecFromGguf(path, w, *kv);
    if (!m.ok()) return Fail(m.status());
    models.push_back(std::move(m).value());
  }
  if (described) models.push_back(*described);

  planner::Calibration cal;
  if (!f.calibrate.empty()) {
    auto c = LoadCalibration(f.calibrate);
    if (!c.ok()) return Fail(c.status());
    cal = *c;
  }

  if (f.advise.advise) return RunAdvise(f.advise, models, hws, w, cal, f.json, f.html);

  std::vector<planner::PlanReport> reports;
  for (const auto& m : models) {
    for (const auto& hw : hws) reports.push_back(planner::Plan(m, hw, w, cal));
  }
  if (f.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : reports) out.push_back(planner::RenderJson(r));
    std::cout << (reports.size() == 1 ? out[0] : out).dump(2) << "\n";
  } else if (reports.size() == 1) {
    std::cout << planner::RenderText(reports[0]);
  } else {
    std::cout << planner::RenderComparison(reports);
  }
  if (!f.html.empty()) {
    std::ofstream out(f.html);
    if (!out) return Fail(Status::InvalidArgument("--html: cannot write '" + f.html + "'"));
    out << planner::RenderHtml(reports);
    if (!f.json) std::cout << "wrote " << f.html << "\n";
  }
  return 0;
}

}  // namespace outpost::app

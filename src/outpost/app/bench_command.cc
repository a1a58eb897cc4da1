#include "outpost/app/bench_command.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>

#include <nlohmann/json.hpp>

#include "outpost/app/config.h"
#include "outpost/bench/report.h"
#include "outpost/bench/runner.h"
#include "outpost/bench/tune.h"
#include "outpost/engine/context.h"
#include "outpost/engine/model.h"
#include "outpost/models/model_runtime.h"
#include "outpost/router/dispatcher_impl.h"
#include "outpost/scheduler/capacity.h"
#include "outpost/util/cpus.h"
#include "outpost/util/units.h"

namespace outpost::app {

struct BenchFlags {
  std::string model;
  int threads = 0;
  int ctx_size = 1024;
  std::string parallel = "auto";
  int parallel_auto_max = 16;
  std::string memory_budget = "auto";
  int prompt_tokens = 256;
  int gen_tokens = 64;
  int reps = 3;
  std::string duration;
  std::string sample_interval = "5s";
  bool short_mode = false;
  bool json = false;
  bool tune = false;
  std::string html;
  std::string out;
};

std::shared_ptr<BenchFlags> AddBenchCommand(CLI::App* app) {
  auto shared = std::make_shared<BenchFlags>();
  BenchFlags* f = shared.get();
  CLI::App* c = app->add_subcommand(
      "bench", "measure bandwidth, prefill, decode, users and memory on this machine");
  c->add_option("-m,--model", f->model, "GGUF model (default: as for serve)");
  c->add_option(
      "--threads", f->threads,
      "CPU threads (default: the CPUs this process may use, affinity and cgroup quota counted)");
  c->add_option("--ctx-size", f->ctx_size, "tokens per session (default 1024)");
  c->add_option("--parallel", f->parallel,
                "sessions: auto or N (default auto, capped by --parallel-auto-max)");
  c->add_option("--parallel-auto-max", f->parallel_auto_max, "cap for auto (default 16)");
  c->add_option("--memory-budget", f->memory_budget, "memory budget for the plan (default auto)");
  c->add_option("--prompt-tokens", f->prompt_tokens,
                "prompt length for the prefill measurement (default 256)");
  c->add_option("--gen-tokens", f->gen_tokens,
                "tokens per request in decode and sweep (default 64)");
  c->add_option("--reps", f->reps, "repetitions; medians are reported (default 3)");
  c->add_option("--duration", f->duration,
                "sustained mode: constant load for this long (60m, 90s)");
  c->add_option("--sample-interval", f->sample_interval,
                "sustained mode: time between samples (default 5s)");
  c->add_flag("--short", f->short_mode,
              "a quick run in seconds (small context, few sessions; for CI)");
  c->add_flag("--tune", f->tune,
              "first find the best threads (decode) and threads_batch (prompts) here, bench with "
              "them, and print the serve config that sets them and a step_budget");
  c->add_flag("--json", f->json, "print JSON (feed it to `outpost plan --calibrate`)");
  c->add_option("--html", f->html, "also write an HTML report with charts to FILE");
  c->add_option("-o,--out", f->out, "also write the JSON report to FILE");
  return shared;
}

int RunBenchCommand(const BenchFlags& f) {
  auto fail = [](const std::string& m) {
    std::fprintf(stderr, "outpost bench: %s\n", m.c_str());
    return 2;
  };
  ServeConfig cfg;
  cfg.model = f.model.empty() ? DefaultModelPath() : f.model;
  cfg.threads = f.threads;
  cfg.queue_length = 1024;
  cfg.queue_wait_ms = 3'600'000;
  cfg.log_level = "warn";
  bench::BenchOptions o;
  o.threads = f.threads;
  o.prompt_tokens = f.prompt_tokens;
  o.gen_tokens = f.gen_tokens;
  o.reps = f.reps;
  int ctx = f.ctx_size;
  std::string parallel = f.parallel;
  if (f.short_mode) {
    ctx = 256;
    parallel = "4";
    o.prompt_tokens = 64;
    o.gen_tokens = 16;
    o.reps = 1;
    o.membw_mib = 256;
  }
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"ctx_size", std::to_string(ctx)},
           {"parallel", parallel},
           {"parallel_auto_max", std::to_string(f.parallel_auto_max)},
           {"memory_budget", f.memory_budget}}) {
    if (Status st = ApplySetting(&cfg, key, value); !st.ok())
      return fail("--" + key + ": " + st.message());
  }
  if (o.gen_tokens < 2 || o.reps < 1 || o.prompt_tokens < 1) {
    return fail("--gen-tokens must be >= 2, --reps >= 1 and --prompt-tokens >= 1");
  }
  if (!f.duration.empty()) {
    auto d = util::PositiveDurationMsFlag("--duration", f.duration);
    if (!d.ok()) return fail(d.status().message());
    o.duration_s = static_cast<double>(*d) / 1000.0;
    auto s = util::PositiveDurationMsFlag("--sample-interval", f.sample_interval);
    if (!s.ok()) return fail(s.status().message());
    o.sample_interval_s = static_cast<double>(*s) / 1000.0;
  }
  o.progress = [](const std::string& line) { std::fprintf(stderr, "[bench] %s\n", line.c_str()); };

  spdlog::set_level(spdlog::level::warn);
  engine::InstallLlamaLogger(false);
  for (const std::string& w : engine::CpuThreadWarnings(f.threads, cfg.threads_batch)) {
    std::fprintf(stderr, "outpost bench: warning: %s\n", w.c_str());
  }
  telemetry::StatRegistry stats;
  const uint64_t budget =
      cfg.memory_budget > 0 ? cfg.memory_budget : scheduler::DetectAvailableMemory();
  std::optional<bench::Tuning> tuning;
  if (f.tune) {
    const int cores = f.threads > 0 ? f.threads : util::UsableCpus().usable;
    auto t = bench::TuneThreads(ModelRuntimeOptionsFrom(cfg), bench::ThreadCandidates(cores),
                                o.prompt_tokens, o.gen_tokens, o.reps, budget, stats, o.progress);
    if (!t.ok()) {
      std::fprintf(stderr, "outpost bench: --tune: %s\n", t.status().message().c_str());
      return 1;
    }
    tuning = std::move(t).value();
    cfg.threads = tuning->threads;
    cfg.threads_batch = tuning->threads_batch;
    o.threads = tuning->threads;
  }
  models::MemoryLedger ledger(budget);
  auto served = models::LoadModel(ModelRuntimeOptionsFrom(cfg), &ledger, &stats);
  if (!served.ok()) {
    std::fprintf(stderr, "outpost bench: cannot load %s: %s\n", cfg.model.c_str(),
                 served.status().message().c_str());
    return 1;
  }
  models::ServingSet serving;
  serving.Add(*served);
  router::DispatcherImpl dispatcher(&serving, /*router=*/nullptr);
  const bench::BenchReport r = bench::RunBench(dispatcher, **served, stats, o);
  (*served)->scheduler->Stop();
  nlohmann::json report = bench::BenchJson(r);
  std::string suggested;
  if (tuning) {
    bench::SuggestFromSweep(r.sweep, &*tuning);
    suggested = bench::SuggestedConfig(*tuning);
    nlohmann::json points = nlohmann::json::array();
    for (const auto& p : tuning->points) {
      points.push_back(
          {{"threads", p.threads}, {"prefill_tps", p.prefill_tps}, {"decode_tps", p.decode_tps}});
    }
    nlohmann::json verify = nlohmann::json::array();
    for (const auto& v : tuning->verify) {
      verify.push_back({{"sessions", v.sessions}, {"step_ratio", v.ratio}});
    }
    report["tuning"] = {{"points", points},
                        {"verify_cost", {{"draft", bench::kTuneDraft}, {"points", verify}}},
                        {"suggested",
                         {{"threads", tuning->threads},
                          {"threads_batch", tuning->threads_batch},
                          {"step_budget_ms", tuning->step_budget_ms},
                          {"speculative_draft", tuning->speculative_draft},
                          {"speculative_max_batch", tuning->speculative_max_batch}}},
                        {"config", suggested}};
  }
  const std::string json = report.dump(2);
  if (f.json) {
    std::cout << json << "\n";
  } else {
    std::cout << bench::BenchText(r);
    if (tuning) {
      std::cout << "\nthreads tried (prefill / decode tok/s):\n";
      for (const auto& p : tuning->points) {
        std::printf("  %3d threads  %8.1f  %7.1f\n", p.threads, p.prefill_tps, p.decode_tps);
      }
      std::printf("\nverifying %d guesses per sequence (step time with them / without):\n",
                  bench::kTuneDraft);
      for (const auto& v : tuning->verify) {
        std::printf("  %3d sequences  %.2fx\n", v.sessions, v.ratio);
      }
      if (tuning->verify.empty()) {
        std::printf("  not measured: the sweep must reach %d sessions (it reached %d)\n",
                    1 + bench::kTuneDraft, r.sweep.empty() ? 0 : r.sweep.back().sessions);
      }
      std::cout << "\nsuggested serve config (YAML):\n" << suggested;
    }
  }
  if (!f.out.empty()) {
    std::ofstream(f.out) << json << "\n";
  }
  if (!f.html.empty()) {
    std::ofstream out(f.html);
    if (!out) return fail("--html: cannot write '" + f.html + "'");
    out << bench::BenchHtml(r);
  }
  return 0;
}

}  // namespace outpost::app

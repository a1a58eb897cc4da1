#include "outpost/bench/runner.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <thread>

#include "outpost/bench/membw.h"
#include "outpost/engine/engine.h"
#include "outpost/scheduler/scheduler_stats.h"
#include "outpost/telemetry/sensors.h"
#include "outpost/util/cpus.h"

namespace outpost::bench {
namespace {

using Clock = std::chrono::steady_clock;
using engine::Token;

double Since(Clock::time_point t0, Clock::time_point t) {
  return std::chrono::duration<double>(t - t0).count();
}

double Percentile(std::vector<double> xs, double p) {
  if (xs.empty()) return 0;
  std::sort(xs.begin(), xs.end());
  const double k = (static_cast<double>(xs.size()) - 1) * p / 100.0;
  const size_t lo = static_cast<size_t>(k);
  const size_t hi = std::min(lo + 1, xs.size() - 1);
  return xs[lo] + (xs[hi] - xs[lo]) * (k - static_cast<double>(lo));
}

double Median(std::vector<double> xs) {
  return Percentile(std::move(xs), 50);
}

uint64_t ReadStatusKb(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string k;
  uint64_t v = 0;
  std::string rest;
  while (f >> k) {
    if (k == key) {
      f >> v;
      return v * 1024;
    }
    std::getline(f, rest);
  }
  return 0;
}

struct RunResult {
  bool ok = false;
  double ttft_s = 0;
  double first_s = 0, last_s = 0;  // since submit
  int32_t tokens = 0;
  std::vector<double> gaps_s;
};

// Times one request's output as the engine thread pushes it.
class TimingSink final : public router::ResponseSink {
 public:
  explicit TimingSink(Clock::time_point t0) : t0_(t0) {}
  void OnRoute(const router::RouteReport&) override {}
  void OnHeader(const std::string&, const std::string&) override {}
  void OnLocalStart(const router::LocalAnswerMeta&) override {}
  void OnText(int, std::string) override {
    const double t = Since(t0_, Clock::now());
    if (prev_ < 0) {
      r_.ttft_s = t;
      r_.first_s = t;
    } else {
      r_.gaps_s.push_back(t - prev_);
    }
    prev_ = t;
    r_.last_s = t;
  }
  void OnDone(scheduler::GenerationResult res) override {
    r_.ok = res.finish != scheduler::FinishReason::kError;
    r_.tokens = res.usage.completion_tokens;
    Finish();
  }
  void OnRelayHead(int, const std::string&) override {}
  void OnRelayBody(std::string) override {}
  void OnRelayEnd(Status) override { Finish(); }
  void OnError(Status) override { Finish(); }
  bool Cancelled() override { return false; }

  RunResult Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return done_; });
    return r_;
  }

 private:
  void Finish() {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    cv_.notify_all();
  }
  const Clock::time_point t0_;
  double prev_ = -1;
  RunResult r_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
};

// One greedy request that ignores end-of-sequence, through the dispatcher.
RunResult RunOne(router::Dispatcher& d, std::vector<Token> prompt, int32_t gen) {
  router::CompletionCall call;
  call.request.endpoint = router::Endpoint::kCompletion;
  call.request.prompt_tokens = std::move(prompt);
  call.request.max_tokens = gen;
  call.request.ignore_eos = true;
  call.request.sampling.temperature = 0;
  auto sink = std::make_shared<TimingSink>(Clock::now());
  auto in_flight = d.Dispatch(std::move(call), sink);
  return sink->Wait();
}

// Prompt of exactly n tokens: a filler text, varied by `salt` so sessions differ.
std::vector<Token> Prompt(const engine::Engine& m, int32_t n, int salt) {
  const std::string unit =
      "Report " + std::to_string(salt) +
      ": the harbour crane moved forty containers before the tide turned, and the night "
      "shift logged every lift, every delay and every inspection in the ledger. ";
  std::string text;
  std::vector<Token> toks;
  while (static_cast<int32_t>(toks.size()) < n) {
    text += unit;
    toks = m.Tokenize(text, true, false);
  }
  toks.resize(static_cast<size_t>(n));
  return toks;
}

std::vector<RunResult> RunConcurrent(router::Dispatcher& d, const engine::Engine& e, int32_t n,
                                     int32_t prompt_len, int32_t gen, double* wall_s) {
  std::vector<std::vector<Token>> prompts;
  for (int32_t i = 0; i < n; ++i) prompts.push_back(Prompt(e, prompt_len, i));
  std::vector<RunResult> results(static_cast<size_t>(n));
  std::vector<std::thread> ts;
  const auto t0 = Clock::now();
  for (int32_t i = 0; i < n; ++i) {
    ts.emplace_back([&, i] {
      results[static_cast<size_t>(i)] = RunOne(d, prompts[static_cast<size_t>(i)], gen);
    });
  }
  for (auto& t : ts) t.join();
  *wall_s = Since(t0, Clock::now());
  return results;
}

}  // namespace

Speed MeasureSpeed(router::Dispatcher& d, const engine::Engine& e, int32_t prompt_tokens,
                   int32_t gen_tokens, int32_t reps) {
  Speed sp;
  std::vector<double> pre;
  for (int i = 0; i < reps; ++i) {
    RunResult rr = RunOne(d, Prompt(e, prompt_tokens, 1000 + i), 1);
    if (rr.ok && rr.ttft_s > 0) pre.push_back(prompt_tokens / rr.ttft_s);
  }
  sp.prefill_tps = Median(pre);
  std::vector<double> dec;
  for (int i = 0; i < reps; ++i) {
    RunResult rr = RunOne(d, Prompt(e, 16, 2000 + i), gen_tokens);
    if (rr.ok && rr.last_s > rr.first_s) dec.push_back((rr.tokens - 1) / (rr.last_s - rr.first_s));
  }
  sp.decode_tps = Median(dec);
  return sp;
}

uint64_t ResidentBytes() {
  return ReadStatusKb("VmRSS:");
}
uint64_t PeakResidentBytes() {
  return ReadStatusKb("VmHWM:");
}

BenchReport RunBench(router::Dispatcher& d, const models::ServedModel& model,
                     telemetry::StatRegistry& stats, const BenchOptions& o) {
  // The model's own series (registering again finds them).
  const auto sched_stats = scheduler::SchedulerStats::Register(
      stats, models::ServedModelLabelNames(), models::ServedModelLabels(model));
  const scheduler::CapacityPlan& plan = model.plan;
  const engine::Engine& e = model.scheduler->engine();
  auto progress = [&](const std::string& s) {
    if (o.progress) o.progress(s);
  };
  BenchReport r;
  r.model_name = model.info.name;
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  r.machine = host;
  r.cpus = util::UsableCpus().Describe();
  r.threads = o.threads > 0 ? o.threads : util::UsableCpus().usable;
  r.sessions = plan.sessions;
  r.ctx_per_session = plan.ctx_per_session;
  r.rss_after_load = ResidentBytes();

  progress("memory: filling all " + std::to_string(plan.sessions) + " sessions to " +
           std::to_string(plan.ctx_per_session) + " tokens");
  // First, before anything else allocates: the peak resident set must be the
  // engine's, not the bandwidth probe's arrays.
  {
    double wall = 0;
    RunConcurrent(d, e, plan.sessions, plan.ctx_per_session - 2, 1, &wall);
    r.rss_full = PeakResidentBytes();
    r.planned_bytes = plan.peak_bytes;
    r.memory_error_pct = (static_cast<double>(r.rss_full) - static_cast<double>(r.planned_bytes)) /
                         static_cast<double>(r.planned_bytes) * 100.0;
  }

  progress("memory bandwidth (" + std::to_string(o.membw_mib) + " MiB, " +
           std::to_string(r.threads) + " threads)");
  const Bandwidth bw = MeasureBandwidth(r.threads, o.membw_mib, std::max(2, o.reps));
  r.read_gbps = bw.read_bytes_per_s / 1e9;
  r.triad_gbps = bw.triad_bytes_per_s / 1e9;

  const int32_t prompt_len = std::min(o.prompt_tokens, plan.ctx_per_session - o.gen_tokens - 2);
  progress("prefill: " + std::to_string(prompt_len) + "-token prompt x " + std::to_string(o.reps) +
           "; decode: 1 sequence x " + std::to_string(o.gen_tokens) + " tokens x " +
           std::to_string(o.reps));
  const Speed speed = MeasureSpeed(d, e, prompt_len, o.gen_tokens, o.reps);
  r.prefill_tps = speed.prefill_tps;
  r.decode_tps = speed.decode_tps;
  const double bytes_per_token =
      static_cast<double>(plan.weight_bytes) +
      static_cast<double>(plan.kv_bytes_per_token) * (16 + o.gen_tokens / 2.0);
  r.ceiling_tps = bw.read_bytes_per_s / bytes_per_token;
  r.decode_efficiency = r.ceiling_tps > 0 ? r.decode_tps / r.ceiling_tps : 0;

  std::vector<int32_t> counts;
  for (int32_t n = 1; n < plan.sessions; n *= 2) counts.push_back(n);
  counts.push_back(plan.sessions);
  for (int32_t n : counts) {
    progress("sweep: " + std::to_string(n) + " concurrent sessions");
    double wall = 0;
    auto results = RunConcurrent(d, e, n, 16, o.gen_tokens, &wall);
    SweepPoint p;
    p.sessions = n;
    std::vector<double> ttft, itl, per_user;
    int64_t total = 0;
    for (const auto& rr : results) {
      total += rr.tokens;
      ttft.push_back(rr.ttft_s);
      itl.insert(itl.end(), rr.gaps_s.begin(), rr.gaps_s.end());
      if (rr.last_s > rr.first_s) per_user.push_back((rr.tokens - 1) / (rr.last_s - rr.first_s));
    }
    p.aggregate_tps = static_cast<double>(total) / wall;
    p.per_user_tps = Median(per_user);
    p.ttft_s = {Percentile(ttft, 50), Percentile(ttft, 99)};
    p.itl_s = {Percentile(itl, 50), Percentile(itl, 99)};
    r.sweep.push_back(p);
  }

  telemetry::Sensors sensors;
  r.sensor_sources = sensors.sources();
  if (o.duration_s > 0) {
    progress("sustained: " + std::to_string(static_cast<int>(o.duration_s)) + " s at " +
             std::to_string(plan.sessions) + " sessions, a sample every " +
             std::to_string(static_cast<int>(o.sample_interval_s)) + " s");
    std::atomic<bool> stop{false};
    std::vector<std::thread> workers;
    for (int32_t i = 0; i < plan.sessions; ++i) {
      workers.emplace_back([&, i] {
        int k = 0;
        while (!stop) RunOne(d, Prompt(e, 16, 3000 + i * 1000 + k++), o.gen_tokens);
      });
    }
    const auto t0 = Clock::now();
    uint64_t last_tokens = sched_stats.completion_tokens.value();
    auto last_t = t0;
    while (Since(t0, Clock::now()) < o.duration_s) {
      std::this_thread::sleep_for(
          std::chrono::milliseconds(static_cast<int64_t>(o.sample_interval_s * 1000)));
      const auto now = Clock::now();
      const uint64_t tokens = sched_stats.completion_tokens.value();
      const telemetry::SensorSample s = sensors.Read();
      SustainedSample ss;
      ss.t_s = Since(t0, now);
      ss.tps = static_cast<double>(tokens - last_tokens) / Since(last_t, now);
      ss.cpu_temp_c = s.cpu_temp_c;
      ss.cpu_mhz = s.cpu_mhz;
      ss.cpu_power_w = s.cpu_power_w;
      ss.gpu_temp_c = s.gpu_temp_c;
      ss.gpu_mhz = s.gpu_mhz;
      ss.gpu_power_w = s.gpu_power_w;
      r.sustained.push_back(ss);
      last_tokens = tokens;
      last_t = now;
      char line[160];
      std::snprintf(line, sizeof line, "sustained: t=%4.0fs %6.1f tok/s  cpu %.0f C %.0f MHz",
                    ss.t_s, ss.tps, ss.cpu_temp_c, ss.cpu_mhz);
      progress(line);
    }
    stop = true;
    for (auto& w : workers) w.join();
    // Throttling: the first minute (first third for short runs) against the last stretch.
    const double total = o.duration_s;
    const double first_end = total >= 180 ? 60 : total / 3;
    const double last_start = total >= 180 ? std::max(total - 60, total * 0.75) : total * 2 / 3;
    std::vector<double> first, last;
    for (const auto& s : r.sustained) {
      if (s.t_s <= first_end) first.push_back(s.tps);
      if (s.t_s >= last_start) last.push_back(s.tps);
    }
    r.first_minute_tps = Median(first);
    r.sustained_tps = Median(last);
    r.throttled = r.first_minute_tps > 0 && r.sustained_tps < 0.9 * r.first_minute_tps;
  }
  return r;
}

}  // namespace outpost::bench

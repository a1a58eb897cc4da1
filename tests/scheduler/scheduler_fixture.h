// The scheduler's test fixture: a fake engine, a simulated clock, a sink
// that records what the engine thread pushes, and options sized for tests.
// Shared by the scheduler's test files.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "mocks/fake_engine.h"
#include "mocks/sim_clock.h"
#include "outpost/scheduler/scheduler.h"

namespace outpost::scheduler::testing {

using outpost::testing::FakeEngine;
using outpost::testing::SimClock;

// Records what the engine thread pushes.
class RecordingSink final : public GenerationSink {
 public:
  void OnText(int choice, std::string text) override {
    EXPECT_FALSE(done) << "text after OnDone";
    EXPECT_FALSE(text.empty());
    if (choice == 0) this->text += text;
    if (static_cast<size_t>(choice) >= choices.size()) choices.resize(choice + 1);
    choices[static_cast<size_t>(choice)] += text;
    ++pieces;
  }
  void OnDone(GenerationResult r) override {
    EXPECT_FALSE(done) << "OnDone twice";
    done = true;
    result = std::move(r);
    order.push_back(name);
  }
  bool Cancelled() override { return cancel; }

  std::string name;
  std::string text;                  // choice 0
  std::vector<std::string> choices;  // every choice's text
  int pieces = 0;
  bool done = false;
  bool cancel = false;
  GenerationResult result;
  static inline std::vector<std::string> order;  // finishing order across sinks
};

struct Fixture {
  explicit Fixture(SchedulerOptions o, std::string reply = "hello") {
    o.kv_bytes_per_token = 16;
    auto e = std::make_unique<FakeEngine>(o.sessions, o.batch_size, std::move(reply));
    engine = e.get();
    sched = std::make_unique<Scheduler>(
        std::move(e), o, SchedulerStats::Register(registry, {"model"}, {"fake"}), &clock);
    RecordingSink::order.clear();
  }
  // Submits a prompt of `n` tokens.
  Status Submit(const std::shared_ptr<RecordingSink>& sink, int n = 4, int32_t max_tokens = -1,
                Priority p = Priority::kInteractive, int32_t choices = 1) {
    GenerationRequest req;
    req.n = choices;
    req.prompt.assign(static_cast<size_t>(n), 'a');
    req.max_tokens = max_tokens;
    req.priority = p;
    return sched->Submit(std::move(req), sink);
  }
  // Steps until nothing is active (bounded).
  int RunToIdle() {
    int steps = 0;
    while (sched->StepForTest() && steps < 10000) ++steps;
    return steps;
  }
  std::shared_ptr<RecordingSink> Sink(std::string name) {
    auto s = std::make_shared<RecordingSink>();
    s->name = std::move(name);
    return s;
  }

  telemetry::StatRegistry registry;
  SimClock clock;
  FakeEngine* engine = nullptr;
  std::unique_ptr<Scheduler> sched;
};

inline std::vector<engine::Token> Tokens(const std::string& s) {
  return {s.begin(), s.end()};
}

// Submits `p` (one token per byte).
inline Status SubmitPrompt(Fixture& f, const std::shared_ptr<RecordingSink>& sink,
                           const std::string& p, int32_t max_tokens = -1) {
  GenerationRequest req;
  req.prompt = Tokens(p);
  req.max_tokens = max_tokens;
  return f.sched->Submit(std::move(req), sink);
}

// The sequences of a step's last batch, in order.
inline std::vector<engine::SeqId> SeqsInLastBatch(const FakeEngine& e) {
  std::vector<engine::SeqId> out;
  for (const auto& x : e.batches.back()) {
    if (std::find(out.begin(), out.end(), x.seq) == out.end()) out.push_back(x.seq);
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline SchedulerOptions Opts(int32_t sessions, int32_t max_queue, int32_t batch_size = 64,
                             int32_t prefill_chunk = 16) {
  SchedulerOptions o;
  o.sessions = sessions;
  o.max_queue = max_queue;
  o.batch_size = batch_size;
  o.prefill_chunk = prefill_chunk;
  o.ctx_per_session = 128;
  o.max_queue_wait_ms = 1000;
  // These tests' prompts are all alike; the prefix cache has its own tests
  // (PrefixCache.*) so that chunking and freeing are asserted uncached here.
  o.prefix_cache = false;
  return o;
}

}  // namespace outpost::scheduler::testing

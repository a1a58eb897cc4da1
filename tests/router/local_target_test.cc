// LocalTarget::Mirror — a canary's shadow phase: which requests are mirrored
// to the candidate, that its answer never reaches the client, and how the two
// answers are compared. Real schedulers over fake engines.
#include "outpost/router/local_target.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "mocks/fake_engine.h"
#include "outpost/scheduler/scheduler.h"
#include "outpost/telemetry/stat_registry.h"

namespace outpost::router {
namespace {

using outpost::testing::FakeEngine;

// The client's side: what reached it, and when it was done.
class ClientSink final : public ResponseSink {
 public:
  void OnRoute(const RouteReport&) override {}
  void OnHeader(const std::string&, const std::string&) override {}
  void OnLocalStart(const LocalAnswerMeta& meta) override { version = meta.version; }
  void OnText(int, std::string t) override {
    if (slow) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::lock_guard<std::mutex> lock(mu);
    text += t;
  }
  void OnLogprobs(int, std::vector<scheduler::TokenInfo>) override {}
  void OnDone(scheduler::GenerationResult) override {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
    cv.notify_all();
  }
  void OnRelayHead(int, const std::string&) override {}
  void OnRelayBody(std::string) override {}
  void OnRelayEnd(Status) override {}
  void OnError(Status) override {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
    cv.notify_all();
  }
  bool Cancelled() override { return false; }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::seconds(5), [&] { return done; });
  }

  std::mutex mu;
  std::condition_variable cv;
  std::string text, version;
  bool done = false;
  bool slow = false;  // a slow reader: 5 ms a piece
};

class Shadow : public ::testing::Test {
 protected:
  // A completion request for `m` as LocalTarget::Prepare makes it.
  static scheduler::GenerationRequest Prepared(const models::ServedModel& m,
                                               const std::string& prompt, int32_t max_tokens) {
    CompletionCall call;
    call.request.endpoint = Endpoint::kCompletion;
    call.request.prompt = prompt;
    call.request.max_tokens = max_tokens;
    scheduler::GenerationRequest gen;
    EXPECT_TRUE(LocalTarget::Prepare(m, call, &gen).ok());
    return gen;
  }
  std::shared_ptr<models::ServedModel> Model(const std::string& version, const std::string& reply,
                                             int32_t sessions = 2) {
    auto m = std::make_shared<models::ServedModel>();
    m->id = "m";
    m->version = version;
    scheduler::SchedulerOptions o;
    o.sessions = sessions;
    o.batch_size = 64;
    m->scheduler = std::make_shared<scheduler::Scheduler>(
        std::make_unique<FakeEngine>(sessions, 64, reply), o,
        scheduler::SchedulerStats::Register(registry_, {"model", "version"}, {"m", version}));
    m->scheduler->Start();
    // One request through it before anything else starts: its engine thread
    // is then running and has logged, so two engine threads never make
    // spdlog's registry at once (its lazy construction, in the uninstrumented
    // library, is what ThreadSanitizer would report).
    auto sink = std::make_shared<ClientSink>();
    EXPECT_TRUE(m->scheduler->Submit(Prepared(*m, "warm", 1), sink).ok());
    sink->Wait();
    Idle(*m);  // its session is free again (a mirror needs an idle candidate)
    return m;
  }
  // One request through the dispatcher's steps: Prepare, Mirror, Run.
  std::string Ask(const LocalTarget& target, const models::ServedModel& served,
                  float temperature = 0.0f) {
    CompletionCall call;
    call.id = "cmpl-" + std::to_string(++n_);
    call.request.endpoint = Endpoint::kCompletion;
    call.request.model = "m";
    call.request.prompt = "hi";
    call.request.max_tokens = 16;
    call.request.sampling.temperature = temperature;
    scheduler::GenerationRequest gen;
    EXPECT_TRUE(LocalTarget::Prepare(served, call, &gen).ok());
    auto compare = target.Mirror(served, call, gen);
    auto sink = std::make_shared<ClientSink>();
    LocalTarget::Run(served, std::move(gen), sink, std::move(compare));
    sink->Wait();
    EXPECT_EQ(sink->version, served.version);
    return sink->text;
  }
  // Waits until `m` has nothing running or queued (a mirror needs that).
  static void Idle(const models::ServedModel& m) {
    for (int i = 0; i < 250; ++i) {
      const auto s = m.scheduler->Snapshot();
      if (s.active + s.queued == 0) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  // Waits for the candidate's outcomes to count `n` requests.
  models::VersionOutcomes::Snapshot Settled(const models::ServedModel& m, int64_t n,
                                            int64_t compared) {
    for (int i = 0; i < 250; ++i) {
      const auto s = m.outcomes->Take();
      if (s.requests >= n && s.compared >= compared) return s;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return m.outcomes->Take();
  }

  telemetry::StatRegistry registry_;
  models::ServingSet serving_;
  int n_ = 0;
};

TEST_F(Shadow, TheCandidateAnswersUnseenAndDifferentAnswersAreCounted) {
  auto active = Model("1", "paris");
  auto candidate = Model("2", "lyon");
  serving_.Add(active);
  serving_.SetCanary(candidate, /*share_bp=*/0, /*shadow_bp=*/10000);
  const LocalTarget target(&serving_);
  for (int i = 0; i < 4; ++i) {
    // The client hears only the active version, whatever the candidate says.
    EXPECT_EQ(Ask(target, *serving_.Find("m", "conversation-" + std::to_string(i))), "paris");
    Idle(*candidate);
  }
  const auto s = Settled(*candidate, 4, 4);
  EXPECT_EQ(s.requests, 4);
  EXPECT_EQ(s.errors, 0);
  EXPECT_EQ(s.compared, 4);
  EXPECT_EQ(s.same, 0);
  EXPECT_EQ(active->outcomes->Take().requests, 4);
}

TEST_F(Shadow, SameAnswersAreCountedSameAndSampledRequestsOnly) {
  auto active = Model("1", "paris");
  auto candidate = Model("2", "paris");
  serving_.Add(active);
  serving_.SetCanary(candidate, 0, /*shadow_bp=*/2500);  // every fourth request
  const LocalTarget target(&serving_);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(Ask(target, *active), "paris");
    Idle(*candidate);
  }
  const auto s = Settled(*candidate, 2, 2);
  EXPECT_EQ(s.requests, 2);
  EXPECT_EQ(s.compared, 2);
  EXPECT_EQ(s.same, 2);
  // A sampled request (temperature 1) is mirrored but not compared.
  for (int i = 0; i < 4; ++i) {
    Ask(target, *active, 1.0f);
    Idle(*candidate);
  }
  const auto t = Settled(*candidate, 3, 2);
  EXPECT_EQ(t.requests, 3);
  EXPECT_EQ(t.compared, 2);
}

TEST_F(Shadow, NoSpareCapacityMeansNoMirror) {
  auto active = Model("1", "paris");
  auto candidate = Model("2", "paris", /*sessions=*/1);
  serving_.Add(active);
  serving_.SetCanary(candidate, 0, 10000);
  const LocalTarget target(&serving_);
  // Keep the candidate busy with a long request of its own.
  CompletionCall call;
  call.request.endpoint = Endpoint::kCompletion;
  call.request.prompt = "busy";
  call.request.max_tokens = 40;
  call.request.ignore_eos = true;
  scheduler::GenerationRequest gen;
  ASSERT_TRUE(LocalTarget::Prepare(*candidate, call, &gen).ok());
  auto busy = std::make_shared<ClientSink>();
  busy->slow = true;  // 40 pieces, 200 ms
  ASSERT_TRUE(candidate->scheduler->Submit(std::move(gen), busy).ok());
  for (int i = 0; i < 50 && candidate->scheduler->Snapshot().active == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_EQ(candidate->scheduler->Snapshot().active, 1);
  EXPECT_EQ(Ask(target, *active), "paris");
  const auto s = candidate->outcomes->Take();
  EXPECT_EQ(s.shadow_skipped, 1);
  busy->Wait();
  EXPECT_EQ(candidate->outcomes->Take().requests, 0);  // the busy one went round LocalTarget
}

TEST_F(Shadow, ABatchLineCountsButItsLatencyDoesNot) {
  // A canary is judged on what users wait for; a batch line waits for idle
  // capacity by design. (The shadow's own batch-class copies are timed: the
  // tests above judge them on an idle candidate.)
  auto active = Model("1", "paris");
  serving_.Add(active);
  for (auto p : {scheduler::Priority::kBatch, scheduler::Priority::kInteractive}) {
    scheduler::GenerationRequest gen = Prepared(*active, "hi", 8);
    gen.priority = p;
    auto sink = std::make_shared<ClientSink>();
    LocalTarget::Run(*active, std::move(gen), sink, nullptr);
    sink->Wait();
    EXPECT_EQ(sink->text, "paris");
    const auto s = active->outcomes->Take();
    const bool batch = p == scheduler::Priority::kBatch;
    EXPECT_EQ(s.requests, batch ? 1 : 2);
    EXPECT_EQ(s.ttft_seq, batch ? 0u : 1u);
    EXPECT_EQ(s.decode_s > 0, !batch);
  }
}

TEST_F(Shadow, WithoutAShadowNothingIsMirrored) {
  auto active = Model("1", "paris");
  auto candidate = Model("2", "lyon");
  serving_.Add(active);
  serving_.SetCanary(candidate, 0);  // a canary at 0%, no shadow
  const LocalTarget target(&serving_);
  EXPECT_EQ(Ask(target, *active), "paris");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(candidate->outcomes->Take().requests, 0);
  EXPECT_EQ(serving_.ShadowOf("m"), nullptr);
}

}  // namespace
}  // namespace outpost::router

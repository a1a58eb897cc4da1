// ModelLifecycle on a real store (the default model imported under several
// versions) with versions that run on the FakeEngine: each version answers
// its own reply, so a test sees which one serves without loading weights.
#include "outpost/models/model_lifecycle.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <thread>

#include "mocks/fake_engine.h"
#include "mocks/test_model.h"
#include "outpost/scheduler/scheduler.h"

namespace outpost::models {
namespace {

using outpost::testing::FakeEngine;

class Lifecycle : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("outpost_lifecycle_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    auto s = ModelStore::Open(dir_.string());
    ASSERT_TRUE(s.ok()) << s.status().message();
    store_ = std::move(s).value();
    for (const char* ref : {"m:1", "m:2", "m:bad"}) {
      auto v = store_->Import(outpost::testing::ModelPath(), ref);
      ASSERT_TRUE(v.ok()) << v.status().message();
    }
  }
  void TearDown() override {
    lifecycle_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Versions answer "v<version>"; "bad" answers nothing. With a limit, a
  // load refuses (ResourceExhausted) while `limit` versions are loaded.
  void Make(bool hot_standby, int limit = 0) {
    auto loader = [this, limit](
                      const std::string& path, const std::string& id,
                      const std::string& version) -> StatusOr<std::shared_ptr<ServedModel>> {
      EXPECT_TRUE(std::filesystem::exists(path)) << path;
      ++loads_[version];
      if (limit > 0) {
        int live = 0;
        for (auto& w : made_) live += w.expired() ? 0 : 1;
        if (live >= limit) return Status::ResourceExhausted("no room for " + version);
      }
      auto m = std::make_shared<ServedModel>();
      m->id = id;
      m->version = version;
      scheduler::SchedulerOptions o;
      o.sessions = 2;
      o.batch_size = 64;
      m->scheduler = std::make_shared<scheduler::Scheduler>(
          std::make_unique<FakeEngine>(2, 64, version == "bad" ? "" : "v" + version), o,
          scheduler::SchedulerStats::Register(registry_, {"model"}, {id}));
      m->scheduler->Start();
      made_.push_back(m);
      return m;
    };
    ModelLifecycle::Options lo;
    lo.hot_standby = hot_standby;
    lo.drain_wait_ms = 2000;
    lifecycle_ = std::make_unique<ModelLifecycle>(store_.get(), &serving_, loader, &registry_, lo);
  }

  std::string Served() {
    auto m = serving_.Find("m");
    return m == nullptr ? "" : m->version;
  }
  std::map<std::string, std::string> Roles() {
    std::map<std::string, std::string> out;
    for (const auto& l : lifecycle_->LoadedVersions()) out[l.version] = l.role;
    return out;
  }
  std::string State(const std::string& ref) { return store_->Get(ref)->state; }

  std::filesystem::path dir_;
  std::unique_ptr<ModelStore> store_;
  telemetry::StatRegistry registry_;
  ServingSet serving_;
  std::unique_ptr<ModelLifecycle> lifecycle_;
  std::map<std::string, int> loads_;
  std::vector<std::weak_ptr<ServedModel>> made_;
};

TEST_F(Lifecycle, StartNeedsAnActiveVersionOrNamesOne) {
  Make(true);
  auto none = lifecycle_->Start("m");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("no active version of 'm'"), std::string::npos);
  auto started = lifecycle_->Start("m:1");
  ASSERT_TRUE(started.ok()) << started.status().message();
  EXPECT_EQ(Served(), "1");
  EXPECT_EQ(State("m:1"), "active");
}

TEST_F(Lifecycle, ActivateKeepsTheOldVersionHotAndRollbackIsASwitch) {
  Make(true);
  ASSERT_TRUE(lifecycle_->Start("m:1").ok());
  auto swap = lifecycle_->Activate("m:2");
  ASSERT_TRUE(swap.ok()) << swap.status().message();
  EXPECT_EQ(swap->from, "1");
  EXPECT_EQ(swap->to, "2");
  EXPECT_FALSE(swap->from_standby);
  EXPECT_EQ(swap->warmup, "v2");  // the candidate answered before it got traffic
  EXPECT_EQ(Served(), "2");
  EXPECT_EQ(State("m:1"), "standby");
  EXPECT_EQ(State("m:2"), "active");
  EXPECT_EQ(Roles(), (std::map<std::string, std::string>{{"1", "standby"}, {"2", "active"}}));

  auto back = lifecycle_->Rollback("m", "too slow");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE(back->from_standby);
  EXPECT_EQ(back->to, "1");
  EXPECT_EQ(loads_["1"], 1);  // not loaded again
  EXPECT_EQ(Served(), "1");
  EXPECT_EQ(State("m:2"), "retired");
  EXPECT_NE(store_->Get("m:2")->error.find("too slow"), std::string::npos);
  // The version rolled back from unloads (nothing uses it).
  for (int i = 0; i < 100 && Roles().size() > 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(Roles(), (std::map<std::string, std::string>{{"1", "active"}}));
  // Nothing further back: a retired version is no rollback target.
  auto again = lifecycle_->Rollback("m", "again");
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kNotFound);
}

TEST_F(Lifecycle, AFailingCandidateLeavesServingAndStandbyAlone) {
  Make(true);
  ASSERT_TRUE(lifecycle_->Start("m:1").ok());
  ASSERT_TRUE(lifecycle_->Activate("m:2").ok());
  auto bad = lifecycle_->Activate("m:bad");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("answered nothing"), std::string::npos)
      << bad.status().message();
  EXPECT_EQ(Served(), "2");
  EXPECT_EQ(State("m:2"), "active");
  EXPECT_EQ(State("m:bad"), "verified");  // the file is fine; the model is not
  EXPECT_EQ(Roles(), (std::map<std::string, std::string>{{"1", "standby"}, {"2", "active"}}));
  EXPECT_FALSE(lifecycle_->Activate("m:2").ok());  // already served
  EXPECT_EQ(lifecycle_->Activate("m:9").status().code(), StatusCode::kNotFound);
}

TEST_F(Lifecycle, WithoutRoomTheStandbyGivesWayForTheCandidate) {
  Make(true, /*limit=*/2);
  ASSERT_TRUE(lifecycle_->Start("m:1").ok());
  ASSERT_TRUE(lifecycle_->Activate("m:2").ok());  // 1 (standby) + 2 loaded
  auto third = lifecycle_->Activate("m:1");       // from standby: no load
  ASSERT_TRUE(third.ok());
  EXPECT_TRUE(third->from_standby);
  // A fresh version needs room: the standby (2) is unloaded first.
  ASSERT_TRUE(store_->Import(outpost::testing::ModelPath(), "m:3").ok());
  auto fresh = lifecycle_->Activate("m:3");
  ASSERT_TRUE(fresh.ok()) << fresh.status().message();
  EXPECT_EQ(Served(), "3");
  EXPECT_EQ(Roles(), (std::map<std::string, std::string>{{"1", "standby"}, {"3", "active"}}));
}

TEST_F(Lifecycle, WithoutRoomEvenAloneTheSwapIsColdAndHoldsNewRequests) {
  Make(/*hot_standby=*/true, /*limit=*/1);
  ASSERT_TRUE(lifecycle_->Start("m:1").ok());
  auto in_flight = serving_.Find("m");  // a stream still running on version 1
  std::thread finishes([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    in_flight.reset();
  });
  std::string newcomer_got;
  double newcomer_waited_ms = 0;
  std::thread newcomer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));  // the hold is on by then
    const auto t0 = std::chrono::steady_clock::now();
    auto m = serving_.Find("m", "conversation-7");  // the request path
    newcomer_waited_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    newcomer_got = m == nullptr ? "none" : m->version;
  });
  auto swap = lifecycle_->Activate("m:2");
  finishes.join();
  newcomer.join();
  ASSERT_TRUE(swap.ok()) << swap.status().message();
  EXPECT_TRUE(swap->cold);
  EXPECT_GE(swap->held_ms, 450);  // the in-flight stream was waited for, not cut
  EXPECT_EQ(newcomer_got, "2");   // held, then served by the new version: not refused
  EXPECT_GE(newcomer_waited_ms, 250);
  EXPECT_EQ(serving_.waiting(), 0);
  EXPECT_EQ(Served(), "2");
  EXPECT_TRUE(made_[0].expired());  // version 1 unloaded: no room for a standby
  EXPECT_EQ(Roles(), (std::map<std::string, std::string>{{"2", "active"}}));
  // Rolling back is a cold swap too, from disk.
  auto back = lifecycle_->Rollback("m", "test");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE(back->cold);
  EXPECT_EQ(Served(), "1");
  EXPECT_EQ(Roles(), (std::map<std::string, std::string>{{"1", "active"}}));
  EXPECT_EQ(loads_["1"], 3);  // the start, the try refused beside 2, the cold load
}

TEST_F(Lifecycle, AColdSwapToAFailingVersionBringsTheOldOneBack) {
  Make(/*hot_standby=*/true, /*limit=*/1);
  ASSERT_TRUE(lifecycle_->Start("m:1").ok());
  auto bad = lifecycle_->Activate("m:bad");  // loads (after 1 unloads), answers nothing
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("warm"), std::string::npos) << bad.status().message();
  EXPECT_EQ(Served(), "1");
  EXPECT_EQ(State("m:1"), "active");
  EXPECT_EQ(loads_["1"], 2);  // reloaded
  EXPECT_EQ(serving_.waiting(), 0);
  // A request now is not held.
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(serving_.Find("m", "k")->version, "1");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(100));
}

TEST_F(Lifecycle, AnOldVersionStaysLoadedWhileARequestHoldsIt) {
  Make(/*hot_standby=*/false);
  ASSERT_TRUE(lifecycle_->Start("m:1").ok());
  auto held = serving_.Find("m");  // as a request in flight holds it
  ASSERT_TRUE(lifecycle_->Activate("m:2").ok());
  EXPECT_EQ(Roles(), (std::map<std::string, std::string>{{"1", "draining"}, {"2", "active"}}));
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // two reaper passes
  EXPECT_EQ(Roles()["1"], "draining");
  EXPECT_FALSE(made_[0].expired());
  held.reset();
  for (int i = 0; i < 100 && !made_[0].expired(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(made_[0].expired());
  EXPECT_EQ(Roles(), (std::map<std::string, std::string>{{"2", "active"}}));
}

}  // namespace
}  // namespace outpost::models

namespace outpost::models {
namespace {

class Canary : public Lifecycle {
 protected:
  // Starts m:1, then a canary of m:2 with 1 s steps.
  void StartCanary(std::vector<int32_t> steps, int64_t min_requests, double ttft_ratio = 1.5) {
    Make(true);
    ASSERT_TRUE(lifecycle_->Start("m:1").ok());
    ModelLifecycle::CanaryPlan plan;
    plan.steps = std::move(steps);
    plan.bake_ms = 1000;
    plan.min_requests = min_requests;
    plan.max_ttft_ratio = ttft_ratio;
    auto c = lifecycle_->StartCanary("m:2", plan);
    ASSERT_TRUE(c.ok()) << c.status().message();
    EXPECT_EQ(c->percent, plan.steps[0]);
    canary_ = made_.back().lock();
    active_ = serving_.Find("m");
  }
  // n requests on each version, as the router's local target records them.
  void Traffic(int n, double canary_ttft, double active_ttft, bool canary_errors = false) {
    for (int i = 0; i < n; ++i) {
      canary_->outcomes->Record(canary_errors, false, false, 10, canary_ttft);
      active_->outcomes->Record(false, false, false, 10, active_ttft);
    }
  }
  // Waits up to `s` seconds for `pred`.
  template <typename F>
  bool Within(double s, F pred) {
    for (int i = 0; i < s * 50; ++i) {
      if (pred()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return pred();
  }
  std::shared_ptr<ServedModel> canary_;
  std::shared_ptr<const ServedModel> active_;
};

TEST_F(Canary, StickyShareThenStepsThenPromotion) {
  StartCanary({10, 50}, 5);
  EXPECT_EQ(State("m:2"), "canary");
  // Sticky: one key, one version, every time; about the share of keys.
  int to_canary = 0;
  for (int k = 0; k < 2000; ++k) {
    const std::string key = "conversation-" + std::to_string(k);
    const auto first = serving_.Find("m", key);
    for (int again = 0; again < 3; ++again) EXPECT_EQ(serving_.Find("m", key), first);
    to_canary += first->version == "2" ? 1 : 0;
  }
  EXPECT_GT(to_canary, 2000 * 0.06);
  EXPECT_LT(to_canary, 2000 * 0.14);
  EXPECT_EQ(serving_.Find("m")->version, "1");  // no key, no canary lookup: the active one
  Traffic(5, 0.1, 0.1);
  ASSERT_TRUE(Within(3, [&] {
    auto c = lifecycle_->Canaries();
    return !c.empty() && c[0].percent == 50;
  }));
  Traffic(5, 0.1, 0.1);
  ASSERT_TRUE(Within(3, [&] { return Served() == "2"; }));  // promoted after the last step
  EXPECT_EQ(State("m:2"), "active");
  EXPECT_EQ(State("m:1"), "standby");
  EXPECT_TRUE(lifecycle_->Canaries().empty());
  EXPECT_EQ(serving_.Find("m", "conversation-1")->version, "2");
  EXPECT_EQ(Roles(), (std::map<std::string, std::string>{{"1", "standby"}, {"2", "active"}}));
}

TEST_F(Canary, TooLittleTrafficExtendsNeverPromotes) {
  StartCanary({50}, 100);
  Traffic(10, 0.1, 0.1);
  ASSERT_TRUE(Within(3, [&] {
    auto c = lifecycle_->Canaries();
    return !c.empty() && c[0].last_decision.find("extended") != std::string::npos;
  }));
  EXPECT_NE(lifecycle_->Canaries()[0].last_decision.find("10 of 100 requests"), std::string::npos)
      << lifecycle_->Canaries()[0].last_decision;
  EXPECT_EQ(Served(), "1");
  EXPECT_EQ(State("m:2"), "canary");
}

TEST_F(Canary, SlowerThanTheActiveVersionIsAborted) {
  StartCanary({50}, 5, /*ttft_ratio=*/1.5);
  Traffic(10, 0.5, 0.1);
  ASSERT_TRUE(Within(3, [&] { return State("m:2") == "retired"; }));
  EXPECT_NE(store_->Get("m:2")->error.find("TTFT p95 500 ms"), std::string::npos)
      << store_->Get("m:2")->error;
  EXPECT_EQ(Served(), "1");
  EXPECT_EQ(serving_.Find("m", "any-key")->version, "1");
  EXPECT_TRUE(lifecycle_->Canaries().empty());
}

TEST_F(Canary, DecodingMuchSlowerThanTheActiveVersionIsAborted) {
  StartCanary({50}, 5);
  // 10 requests of 20 tokens each: 190 decoded tokens on each side, the
  // canary at 19 tokens/s, the active version at 95.
  for (int i = 0; i < 10; ++i) {
    canary_->outcomes->Record(false, false, false, 20, 0.1, /*decode_s=*/1.0);
    active_->outcomes->Record(false, false, false, 20, 0.1, /*decode_s=*/0.2);
  }
  ASSERT_TRUE(Within(3, [&] { return State("m:2") == "retired"; }));
  EXPECT_NE(
      store_->Get("m:2")->error.find("decode 19.0 tokens/s against the active version's 95.0"),
      std::string::npos)
      << store_->Get("m:2")->error;
  EXPECT_EQ(Served(), "1");
}

TEST_F(Canary, ADecodeRateNeedsASampleBeforeItIsJudged) {
  StartCanary({50}, 5);
  // 5 requests of 4 tokens: 15 decoded tokens each, too few for a verdict on
  // speed; nothing else is worse, so the canary is promoted.
  for (int i = 0; i < 5; ++i) {
    canary_->outcomes->Record(false, false, false, 4, 0.1, /*decode_s=*/3.0);
    active_->outcomes->Record(false, false, false, 4, 0.1, /*decode_s=*/0.03);
  }
  ASSERT_TRUE(Within(3, [&] { return Served() == "2"; }));
}

TEST_F(Lifecycle, ACanaryTakesTheStandbysRoomButNeverColdSwaps) {
  Make(true, /*limit=*/2);  // two versions fit at once
  ASSERT_TRUE(lifecycle_->Start("m:1").ok());
  ASSERT_TRUE(lifecycle_->Activate("m:2").ok());  // m:1 is the hot standby
  ASSERT_TRUE(store_->Import(outpost::testing::ModelPath(), "m:3").ok());
  ModelLifecycle::CanaryPlan plan;
  plan.bake_ms = 60'000;
  auto c = lifecycle_->StartCanary("m:3", plan);
  ASSERT_TRUE(c.ok()) << c.status().message();  // the standby gave way
  EXPECT_EQ(Roles(), (std::map<std::string, std::string>{{"2", "active"}, {"3", "canary"}}));
  ASSERT_TRUE(lifecycle_->Rollback("m", "by hand").ok());  // ends the canary
}

TEST_F(Lifecycle, WithRoomForOneVersionACanaryIsRefusedSayingWhy) {
  Make(true, /*limit=*/1);
  ASSERT_TRUE(lifecycle_->Start("m:1").ok());
  ModelLifecycle::CanaryPlan plan;
  plan.bake_ms = 60'000;
  auto c = lifecycle_->StartCanary("m:2", plan);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(c.status().message().find("both do not fit"), std::string::npos)
      << c.status().message();
  EXPECT_EQ(Served(), "1");
  EXPECT_EQ(State("m:2"), "verified");
  EXPECT_TRUE(lifecycle_->Canaries().empty());
}

TEST_F(Canary, AnErrorBurstAbortsAtOnceAndRollbackEndsACanary) {
  StartCanary({50}, 1000);  // a verdict would need far more traffic: the burst does not wait
  Traffic(3, 0.1, 0.1, /*canary_errors=*/true);
  ASSERT_TRUE(Within(2, [&] { return State("m:2") == "retired"; }));
  EXPECT_NE(store_->Get("m:2")->error.find("error burst: 3 of 3"), std::string::npos);
  // A second canary, ended by hand: the active version was never touched.
  ModelLifecycle::CanaryPlan plan;
  plan.bake_ms = 60'000;
  ASSERT_TRUE(store_->Import(outpost::testing::ModelPath(), "m:3").ok());
  ASSERT_TRUE(lifecycle_->StartCanary("m:3", plan).ok());
  EXPECT_FALSE(lifecycle_->Activate("m:2").ok());  // not while a canary runs
  auto back = lifecycle_->Rollback("m", "by hand");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->from, "3");
  EXPECT_EQ(back->to, "1");
  EXPECT_EQ(State("m:3"), "retired");
  EXPECT_EQ(State("m:1"), "active");
  EXPECT_EQ(Served(), "1");
}

// The shadow phase: no conversation reaches the candidate; a sample of
// requests is mirrored; judged like a step, then the live steps.
class ShadowCanary : public Canary {
 protected:
  void StartShadow(std::vector<int32_t> steps, int32_t shadow, int64_t min_requests) {
    Make(true);
    ASSERT_TRUE(lifecycle_->Start("m:1").ok());
    ModelLifecycle::CanaryPlan plan;
    plan.steps = std::move(steps);
    plan.shadow = shadow;
    plan.bake_ms = 1000;
    plan.min_requests = min_requests;
    auto c = lifecycle_->StartCanary("m:2", plan);
    ASSERT_TRUE(c.ok()) << c.status().message();
    EXPECT_EQ(c->phase, "shadow");
    EXPECT_EQ(c->percent, 0);
    EXPECT_EQ(c->shadow_percent, shadow);
    canary_ = made_.back().lock();
    active_ = serving_.Find("m");
  }
};

TEST_F(ShadowCanary, NoConversationSeesItThenTheStepsBegin) {
  StartShadow({50}, 20, 5);
  EXPECT_EQ(State("m:2"), "canary");
  for (int k = 0; k < 500; ++k) {
    EXPECT_EQ(serving_.Find("m", "conversation-" + std::to_string(k))->version, "1");
  }
  int mirrored = 0;
  for (int i = 0; i < 100; ++i) mirrored += serving_.ShadowOf("m") == canary_ ? 1 : 0;
  EXPECT_EQ(mirrored, 20);
  Traffic(2, 0.1, 0.1);  // too few for a verdict: extended, still in the shadow
  ASSERT_TRUE(Within(3, [&] {
    auto c = lifecycle_->Canaries();
    return !c.empty() && c[0].last_decision.find("extended in the shadow") != std::string::npos;
  }));
  EXPECT_EQ(lifecycle_->Canaries()[0].phase, "shadow");
  Traffic(5, 0.1, 0.1);
  ASSERT_TRUE(Within(3, [&] {
    auto c = lifecycle_->Canaries();
    return !c.empty() && c[0].phase == "live" && c[0].percent == 50;
  }));
  EXPECT_NE(lifecycle_->Canaries()[0].last_decision.find("out of the shadow to 50%"),
            std::string::npos)
      << lifecycle_->Canaries()[0].last_decision;
  EXPECT_EQ(serving_.ShadowOf("m"), nullptr);  // live now: no more mirroring
  Traffic(5, 0.1, 0.1);
  ASSERT_TRUE(Within(3, [&] { return Served() == "2"; }));
  EXPECT_EQ(State("m:2"), "active");
}

TEST_F(ShadowCanary, WithoutStepsTheShadowEndsInThePromotion) {
  StartShadow({}, 100, 5);
  Traffic(5, 0.1, 0.1);
  ASSERT_TRUE(Within(3, [&] { return Served() == "2"; }));
  EXPECT_EQ(State("m:2"), "active");
  EXPECT_EQ(State("m:1"), "standby");
}

TEST_F(ShadowCanary, WorseInTheShadowIsAbortedWithoutServingAnyone) {
  StartShadow({5, 50}, 50, 5);
  for (int i = 0; i < 5; ++i) {
    canary_->outcomes->Record(false, false, /*empty=*/true, 0, -1);
    active_->outcomes->Record(false, false, false, 10, 0.1);
  }
  ASSERT_TRUE(Within(3, [&] { return State("m:2") == "retired"; }));
  EXPECT_NE(store_->Get("m:2")->error.find("empty answers 100.0%"), std::string::npos)
      << store_->Get("m:2")->error;
  EXPECT_EQ(Served(), "1");
  EXPECT_EQ(serving_.ShadowOf("m"), nullptr);
}

TEST_F(Canary, BadPlansNameTheField) {
  Make(true);
  ASSERT_TRUE(lifecycle_->Start("m:1").ok());
  struct Bad {
    std::vector<int32_t> steps;
    int64_t bake_ms, min_requests;
    const char* param;
    int32_t shadow = 0;
  } bad[] = {{{}, 1000, 5, "steps"},       {{0}, 1000, 5, "steps"},
             {{100}, 1000, 5, "steps"},    {{25, 5}, 1000, 5, "steps"},
             {{5}, 10, 5, "bake"},         {{5}, 1000, 0, "min_requests"},
             {{5}, 1000, 5, "shadow", -1}, {{5}, 1000, 5, "shadow", 101},
             {{}, 10, 5, "bake", 10}};  // no steps is fine with a shadow; the bake is not
  for (const auto& b : bad) {
    ModelLifecycle::CanaryPlan plan;
    plan.steps = b.steps;
    plan.bake_ms = b.bake_ms;
    plan.min_requests = b.min_requests;
    plan.shadow = b.shadow;
    auto c = lifecycle_->StartCanary("m:2", plan);
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().param(), b.param) << c.status().message();
  }
  EXPECT_EQ(lifecycle_->StartCanary("m:1", {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(lifecycle_->Promote("m").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace outpost::models

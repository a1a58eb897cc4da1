// FleetAgent (fleet/fleet_agent.h) on a real store and lifecycle whose
// versions run on the FakeEngine (each answers "v<version>"; "bad" answers
// nothing, so its warm-up fails), with the desired state read from a file:
// a new generation is pulled and activated, a canary plan starts a canary
// that a later generation ends, a failed version is not retried within its
// generation, older or unsigned documents change nothing, and the last good
// document survives a restart without the source.
#include "outpost/fleet/fleet_agent.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "mocks/fake_engine.h"
#include "mocks/test_keys.h"
#include "mocks/test_model.h"
#include "outpost/scheduler/scheduler.h"

namespace outpost::fleet {
namespace {

using nlohmann::json;
using outpost::testing::FakeEngine;

class Agent : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("outpost_fleet_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    for (const char* who : {"central", "stranger"}) {
      ASSERT_TRUE(outpost::testing::WriteEd25519KeyPair(dir_.string(), who));
    }
    auto s = models::ModelStore::Open(Path("store"));
    ASSERT_TRUE(s.ok()) << s.status().message();
    store_ = std::move(s).value();
    auto v = store_->Import(outpost::testing::ModelPath(), "m:1");
    ASSERT_TRUE(v.ok()) << v.status().message();
    sha256_ = v->blob_digest.substr(7);
    auto loader =
        [this](const std::string&, const std::string& id,
               const std::string& version) -> StatusOr<std::shared_ptr<models::ServedModel>> {
      auto m = std::make_shared<models::ServedModel>();
      m->id = id;
      m->version = version;
      scheduler::SchedulerOptions o;
      o.sessions = 2;
      o.batch_size = 64;
      m->scheduler = std::make_shared<scheduler::Scheduler>(
          std::make_unique<FakeEngine>(2, 64, version == "bad" ? "" : "v" + version), o,
          scheduler::SchedulerStats::Register(registry_, {"model"}, {id}));
      m->scheduler->Start();
      return m;
    };
    models::ModelLifecycle::Options lo;
    lo.drain_wait_ms = 2000;
    lifecycle_ =
        std::make_unique<models::ModelLifecycle>(store_.get(), &serving_, loader, &registry_, lo);
    ASSERT_TRUE(lifecycle_->Start("m:1").ok());
  }
  void TearDown() override {
    agent_.reset();
    lifecycle_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  // Writes generation `gen` wanting m:`version` (signed by `who`).
  void Publish(int64_t gen, const std::string& version, const json& canary = nullptr,
               const std::string& who = "central", const std::string& sha256 = "") {
    json e = {{"name", "m"},
              {"version", version},
              {"source", outpost::testing::ModelPath()},
              {"sha256", sha256.empty() ? sha256_ : sha256}};
    if (!canary.is_null()) e["canary"] = canary;
    json other = e;  // for another site: never this node's
    other["version"] = "elsewhere";
    other["sites"] = {"plant-9"};
    const json doc = {{"generation", gen}, {"models", {other, e}}};
    auto env = models::SignDsse(Path(who + ".key"), kDesiredStateType, doc.dump());
    ASSERT_TRUE(env.ok()) << env.status().message();
    std::ofstream(Path("desired.json"), std::ios::trunc) << *env;
  }
  void Make(bool start = true) {
    FleetOptions o;
    o.source = Path("desired.json");
    o.interval_ms = 3'600'000;  // polls come from Wake()
    o.node = "box-1";
    o.identity.site = "plant-3";
    auto keys = models::LoadTrustedKeys({Path("central.pub")});
    ASSERT_TRUE(keys.ok());
    o.document_keys = *keys;
    o.state_file = Path("fleet-state.json");
    o.policies = *models::ParseSignaturePolicies("off");
    agent_ = std::make_unique<FleetAgent>(lifecycle_.get(), o, &registry_);
    if (start) {
      ASSERT_TRUE(agent_->Start().ok());
    }
  }
  // Polls and waits until the observed state satisfies `done`.
  json Poll(const std::function<bool(const json&)>& done) {
    agent_->Wake();
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    json o;
    while (std::chrono::steady_clock::now() < end) {
      o = agent_->Observed();
      if (!o.is_null() && done(o)) return o;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "the observed state never got there: " << o.dump();
    return o;
  }
  static std::string Phase(const json& o) {
    return o.contains("models") && !o["models"].empty() ? o["models"][0].value("phase", "") : "";
  }
  std::string Served() {
    auto m = serving_.Find("m");
    return m == nullptr ? "" : m->version;
  }

  std::filesystem::path dir_;
  std::string sha256_;
  std::unique_ptr<models::ModelStore> store_;
  telemetry::StatRegistry registry_;
  models::ServingSet serving_;
  std::unique_ptr<models::ModelLifecycle> lifecycle_;
  std::unique_ptr<FleetAgent> agent_;
};

TEST_F(Agent, BeforeTheFirstPollTheObservedStateIsAnObjectWithNothingReached) {
  Publish(1, "2");
  Make(/*start=*/false);
  const json o = agent_->Observed();
  ASSERT_TRUE(o.is_object()) << o.dump();
  EXPECT_EQ(o["observed_generation"], 0);
  EXPECT_EQ(o["generation"], 0);
  EXPECT_TRUE(o["models"].empty());
  EXPECT_EQ(o["node"], "box-1");
  EXPECT_EQ(o["document"]["source"], Path("desired.json"));
  EXPECT_EQ(o["document"]["fetched"], 0);
}

TEST_F(Agent, ANewGenerationIsPulledAndActivated) {
  Publish(1, "2");
  Make();
  json o = Poll([](const json& o) { return o["observed_generation"] == 1; });
  EXPECT_EQ(Phase(o), "converged");
  EXPECT_EQ(o["models"][0]["desired"], "m:2");
  EXPECT_EQ(o["models"][0]["active"], "2");
  ASSERT_EQ(o["models"].size(), 1u);  // the other site's entry is not this node's
  EXPECT_EQ(o["node"], "box-1");
  EXPECT_EQ(o["site"], "plant-3");
  EXPECT_EQ(Served(), "2");
  EXPECT_EQ(store_->Get("m:2")->state, "active");
  EXPECT_EQ(store_->Get("m:1")->state, "standby");
  // Polling again changes nothing.
  o = Poll([](const json& o) { return o["document"].value("fetched", 0) > 0; });
  EXPECT_EQ(Served(), "2");
}

TEST_F(Agent, OlderOrUnsignedDocumentsChangeNothing) {
  Publish(5, "2");
  Make();
  Poll([](const json& o) { return o["observed_generation"] == 5; });
  Publish(4, "3");
  json o = Poll([](const json& o) { return o["document"].contains("error"); });
  EXPECT_NE(o["document"]["error"].get<std::string>().find("older"), std::string::npos) << o.dump();
  EXPECT_EQ(o["generation"], 5);
  Publish(6, "3", nullptr, "stranger");
  o = Poll([](const json& o) {
    return o["document"].value("error", "").find("no trusted key") != std::string::npos;
  });
  Publish(5, "3");  // the same generation, other content
  o = Poll([](const json& o) {
    return o["document"].value("error", "").find("higher generation") != std::string::npos;
  });
  std::filesystem::remove(Path("desired.json"));  // the link is down
  o = Poll([](const json& o) {
    return o["document"].value("error", "").find("cannot read") != std::string::npos;
  });
  EXPECT_EQ(Phase(o), "converged");
  EXPECT_EQ(Served(), "2");
  EXPECT_FALSE(store_->Get("m:3").ok());  // nothing refused was pulled
}

TEST_F(Agent, AFailedVersionIsNotRetriedUntilANewGeneration) {
  Publish(1, "bad");
  Make();
  json o = Poll([](const json& o) { return Phase(o) == "failed"; });
  EXPECT_NE(o["models"][0].value("message", "").find("activate"), std::string::npos) << o.dump();
  EXPECT_EQ(Served(), "1");
  EXPECT_EQ(o["observed_generation"], 0);
  // The same generation again: not tried again (the warm-up is not rerun).
  o = Poll([](const json& o) { return Phase(o) == "failed"; });
  EXPECT_EQ(Served(), "1");
  // A new generation with a good version converges.
  Publish(2, "2");
  o = Poll([](const json& o) { return o["observed_generation"] == 2; });
  EXPECT_EQ(Served(), "2");
}

TEST_F(Agent, ACanaryPlanStartsACanaryThatANewGenerationEnds) {
  Publish(1, "2", {{"steps", {50}}, {"bake", "1h"}, {"min_requests", 1000}});
  Make();
  json o = Poll([](const json& o) { return Phase(o) == "canary"; });
  EXPECT_EQ(o["models"][0]["canary"]["percent"], 50);
  EXPECT_EQ(Served(), "1");  // the active version is untouched
  ASSERT_EQ(lifecycle_->Canaries().size(), 1u);
  EXPECT_EQ(lifecycle_->Canaries()[0].version, "2");
  // Generation 2 goes back to version 1: the canary ends, 1 keeps serving.
  Publish(2, "1");
  o = Poll([](const json& o) { return o["observed_generation"] == 2; });
  EXPECT_TRUE(lifecycle_->Canaries().empty());
  EXPECT_EQ(Served(), "1");
  EXPECT_EQ(store_->Get("m:2")->state, "retired");
}

TEST_F(Agent, TheLastGoodDocumentSurvivesARestartWithoutTheSource) {
  Publish(3, "2");
  Make();
  Poll([](const json& o) { return o["observed_generation"] == 3; });
  agent_.reset();
  std::filesystem::remove(Path("desired.json"));
  Make();
  json o = Poll([](const json& o) { return o["document"].contains("error"); });
  EXPECT_EQ(o["generation"], 3);
  EXPECT_EQ(o["observed_generation"], 3);
  EXPECT_EQ(Phase(o), "converged");
  // An older generation is still refused after the restart.
  Publish(2, "1");
  o = Poll([](const json& o) {
    return o["document"].value("error", "").find("older") != std::string::npos;
  });
  EXPECT_EQ(Served(), "2");
}

TEST_F(Agent, AStoredVersionWithOtherBytesIsNotTaken) {
  // m:1 is in the store; a document pinning other bytes under that name
  // must not make the agent serve what the store has.
  Publish(1, "9", nullptr, "central", std::string(64, 'e'));  // a pull of a file that is not it
  ASSERT_TRUE(store_->Import(outpost::testing::ModelPath(), "m:8").ok());
  Make();
  json o = Poll([](const json& o) { return Phase(o) == "failed"; });
  EXPECT_NE(o["models"][0].value("message", "").find("digest"), std::string::npos) << o.dump();
  Publish(2, "8", nullptr, "central", std::string(64, 'e'));
  o = Poll([](const json& o) { return Phase(o) == "failed" && o["generation"] == 2; });
  EXPECT_NE(o["models"][0].value("message", "").find("other bytes"), std::string::npos) << o.dump();
  EXPECT_EQ(Served(), "1");
}

TEST_F(Agent, StartRefusesAnUnusableConfiguration) {
  FleetOptions o;
  o.source = Path("desired.json");
  o.state_file = Path("fleet-state.json");
  FleetAgent no_keys(lifecycle_.get(), o, &registry_);
  Status st = no_keys.Start();
  EXPECT_EQ(st.param(), "fleet_trusted_keys") << st.message();
  o.document_keys = *models::LoadTrustedKeys({Path("central.pub")});
  o.source = "ftp://central/desired.json";
  FleetAgent bad_source(lifecycle_.get(), o, &registry_);
  st = bad_source.Start();
  EXPECT_EQ(st.param(), "fleet_url") << st.message();
  o.source = "oci://";
  FleetAgent bad_oci(lifecycle_.get(), o, &registry_);
  EXPECT_FALSE(bad_oci.Start().ok());
}

}  // namespace
}  // namespace outpost::fleet

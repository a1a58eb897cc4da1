// SummaryBuilder's events from counters: a model version change and a canary
// decision become uplink events with their labels, once per increment, and
// what the registry held before the builder started is not an event.
#include "outpost/telemetry/summary.h"

#include <gtest/gtest.h>

#include "mocks/sim_clock.h"

namespace outpost::telemetry {
namespace {

TEST(SummaryEvents, ModelSwapsAndCanaryDecisionsAreEvents) {
  StatRegistry registry;
  outpost::testing::SimClock clock;
  auto& swaps = registry.Register(
      {"outpost_model_swaps_total", "", StatType::kCounter, {"model", "action", "result"}, {}});
  auto& canary = registry.Register(
      {"outpost_canary_decisions_total", "", StatType::kCounter, {"model", "decision"}, {}});
  swaps.CounterWith({"smollm2", "activate", "ok"}).Add();  // before the builder: no event
  SummaryBuilder b(&registry, &clock);
  b.Sample();
  EXPECT_TRUE(b.TakeEvents().empty());

  swaps.CounterWith({"smollm2", "rollback", "ok"}).Add();
  canary.CounterWith({"smollm2", "abort"}).Add();
  canary.CounterWith({"smollm2", "start"}).Add();
  b.Sample();
  auto events = b.TakeEvents();
  ASSERT_EQ(events.size(), 3u);
  std::map<std::string, UplinkEvent> by_name;
  for (auto& e : events) by_name[e.name] = e;
  ASSERT_TRUE(by_name.count("outpost.model.rollback"));
  EXPECT_EQ(by_name["outpost.model.rollback"].severity, "WARN");
  EXPECT_EQ(by_name["outpost.model.rollback"].attributes["model"], "smollm2");
  EXPECT_EQ(by_name["outpost.model.rollback"].attributes["result"], "ok");
  EXPECT_EQ(by_name["outpost.canary.abort"].severity, "WARN");
  EXPECT_EQ(by_name["outpost.canary.start"].severity, "INFO");
  b.Sample();
  EXPECT_TRUE(b.TakeEvents().empty());  // no increment, no event
  swaps.CounterWith({"smollm2", "activate", "ok"}).Add();
  b.Sample();
  events = b.TakeEvents();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].name, "outpost.model.activate");
  EXPECT_EQ(events[0].attributes["events"], "1");
}

TEST(SummaryEvents, VersionsAndTheCanaryShareAreInTheSummary) {
  StatRegistry registry;
  outpost::testing::SimClock clock;
  registry
      .Register(
          {"outpost_model_version_info", "", StatType::kGauge, {"model", "version", "role"}, {}})
      .GaugeWith({"smollm2", "2", "canary"})
      .Set(1);
  registry.Register({"outpost_canary_share_percent", "", StatType::kGauge, {"model"}, {}})
      .GaugeWith({"smollm2"})
      .Set(25);
  SummaryBuilder b(&registry, &clock);
  const std::string text = b.Close().dump();
  EXPECT_NE(text.find("outpost_model_version_info"), std::string::npos) << text;
  EXPECT_NE(text.find("\"canary\""), std::string::npos) << text;
  EXPECT_NE(text.find("outpost_canary_share_percent"), std::string::npos) << text;
}

}  // namespace
}  // namespace outpost::telemetry

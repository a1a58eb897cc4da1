#include "outpost/planner/advisor.h"

#include <gtest/gtest.h>

#include "mocks/temp_file.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "outpost/planner/advice_report.h"
#include "outpost/router/routing_config.h"

namespace outpost::planner {
namespace {

// Sets fields as the YAML and the flags do; fails the test on a bad one.
AdviseWorkload Make(std::initializer_list<std::pair<const char*, const char*>> fields) {
  AdviseWorkload w;
  for (const auto& [k, v] : fields) {
    const Status st = SetAdviseField(&w, k, v);
    EXPECT_TRUE(st.ok()) << k << "=" << v << ": " << st.message();
  }
  return w;
}

// As `outpost plan --advise` runs it: 16 peak sessions, 100 ms per token.
Advice AdviseOn(const AdviseWorkload& w, std::vector<HardwareProfile> hw = {}) {
  Workload serving;
  serving.peak_sessions = 16;
  return Advise(w, TypicalModel(w.model_params), hw, serving, Calibration{});
}

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// --- The worked examples of the issue ------------------------------------

TEST(Advise, CarAtHundredKmPerHourRunsOnTheDevice) {
  // A 200 ms round trip before the model even starts; at 100 km/h that is 5.6 m.
  const Advice a = AdviseOn(Make({{"name", "driver assistant"},
                                  {"response_budget", "100ms"},
                                  {"cloud_rtt", "200ms"},
                                  {"cloud_ttft", "0ms"},
                                  {"speed", "100km/h"},
                                  {"model_size", "1B"},
                                  {"requests_per_day", "20000"}}));
  EXPECT_EQ(a.verdict, Placement::kEdge) << a.summary;
  ASSERT_EQ(a.rules.size(), 6u);
  EXPECT_EQ(a.rules[0].decides, Placement::kEdge);
  EXPECT_TRUE(a.rules[0].hard);
  EXPECT_TRUE(Contains(a.rules[0].why, "travels 5.6 m")) << a.rules[0].why;
  EXPECT_TRUE(Contains(a.rules[0].why, "over the 100 ms budget")) << a.rules[0].why;
  EXPECT_EQ(a.rules[2].decides, Placement::kNone);  // a 1B model fits a Jetson
  EXPECT_TRUE(Contains(a.summary, "immediacy"));
}

TEST(Advise, HospitalReportsStayOnPremises) {
  // Patient reports may not leave the organisation; long documents need a
  // 70B model, which the hospital's own H100 server holds.
  const Advice a = AdviseOn(Make({{"name", "radiology reports"},
                                  {"data_boundary", "organisation"},
                                  {"model_size", "70B"},
                                  {"requests_per_day", "3000"},
                                  {"tokens_per_request", "6000"}}),
                            {*FindProfile("nvidia-h100-sxm", {})});
  EXPECT_EQ(a.verdict, Placement::kOnPremises) << a.summary;
  EXPECT_EQ(a.rules[1].decides, Placement::kOnPremises);
  EXPECT_TRUE(a.rules[1].hard);
  EXPECT_FALSE(Contains(a.summary, "no candidate hardware")) << a.summary;
  // On a Jetson alone the boundary still rules, and the advice says the
  // hardware is too small instead of sending reports to the cloud.
  const Advice small = AdviseOn(Make({{"data_boundary", "organisation"}, {"model_size", "70B"}}),
                                {*FindProfile("jetson-orin-nano-8gb", {})});
  EXPECT_EQ(small.verdict, Placement::kOnPremises);
  EXPECT_TRUE(Contains(small.summary, "no candidate hardware passes")) << small.summary;
}

TEST(Advise, TenUserInternalToolGoesToTheCloud) {
  const Advice a = AdviseOn(Make({{"name", "internal wiki helper"},
                                  {"model_size", "8B"},
                                  {"requests_per_day", "200"},
                                  {"tokens_per_request", "1500"},
                                  {"cloud_price", "1.00"}}));
  EXPECT_EQ(a.verdict, Placement::kCloud) << a.summary;
  EXPECT_EQ(a.rules[3].decides, Placement::kCloud);
  EXPECT_LT(a.cost.cloud_usd_per_month, a.cost.local_usd_per_month);
  EXPECT_NEAR(a.cost.cloud_usd_per_month, 200 * 30.44 * 1500 * 1.0 / 1e6, 0.01);
}

TEST(Advise, TenMillionUsersRepeatingASimpleTaskRunOnDevices) {
  const Advice a = AdviseOn(Make({{"name", "keyboard suggestions"},
                                  {"model_size", "1B"},
                                  {"requests_per_day", "30M"},
                                  {"tokens_per_request", "300"},
                                  {"cloud_price", "0.50"}}));
  EXPECT_EQ(a.verdict, Placement::kEdge) << a.summary;
  EXPECT_EQ(a.rules[3].decides, Placement::kEdge);
  EXPECT_GT(a.cost.boxes, 100);
  EXPECT_LT(a.cost.local_usd_per_month, a.cost.cloud_usd_per_month / 2);
  EXPECT_GT(a.cost.crossover_requests_per_day, 0);
  EXPECT_LT(a.cost.crossover_requests_per_day, 30e6);
}

TEST(Advise, OfflineTravelTranslatorRunsOnTheDevice) {
  // Low volume makes the cloud cheaper, but it must work with no connection.
  const Advice a = AdviseOn(Make({{"name", "travel translator"},
                                  {"offline", "true"},
                                  {"model_size", "1B"},
                                  {"requests_per_day", "50"}}));
  EXPECT_EQ(a.verdict, Placement::kEdge) << a.summary;
  EXPECT_EQ(a.rules[5].decides, Placement::kEdge);
  EXPECT_TRUE(a.rules[5].hard);
  EXPECT_EQ(a.rules[3].decides, Placement::kCloud);  // the preference loses to the requirement
}

TEST(Advise, VoiceAssistantIsHybrid) {
  // Wake-word answers must be instant; open questions need a big model.
  const Advice a = AdviseOn(Make({{"name", "voice assistant"},
                                  {"response_budget", "300ms"},
                                  {"cloud_rtt", "120ms"},
                                  {"model_size", "70B"},
                                  {"easy_share", "80%"},
                                  {"requests_per_day", "1M"}}));
  EXPECT_EQ(a.verdict, Placement::kHybrid) << a.summary;
  EXPECT_EQ(a.rules[0].decides, Placement::kEdge);
  EXPECT_EQ(a.rules[2].decides, Placement::kHybrid);
  EXPECT_DOUBLE_EQ(a.cost.local_share, 0.8);
  // The boxes run the small local model, not the 70B one.
  EXPECT_LT(a.local_model.weight_bytes, a.model.weight_bytes / 10);
  ASSERT_NE(a.chosen, nullptr);
  EXPECT_NE(a.chosen->plan.hardware.device_class, "rack-gpu");
}

// --- Combination and arithmetic -----------------------------------------

TEST(Advise, DisagreeingPreferencesGiveHybrid) {
  // Cost says edge (high volume), updates say cloud (the model changes hourly).
  const Advice a = AdviseOn(Make({{"model_size", "1B"},
                                  {"requests_per_day", "30M"},
                                  {"tokens_per_request", "300"},
                                  {"update_interval", "hourly"}}));
  EXPECT_EQ(a.rules[3].decides, Placement::kEdge);
  EXPECT_EQ(a.rules[4].decides, Placement::kCloud);
  EXPECT_EQ(a.verdict, Placement::kHybrid);
  EXPECT_TRUE(Contains(a.summary, "disagree")) << a.summary;
}

TEST(Advise, UpdatesWithoutARemotePathPreferTheCloud) {
  const Advice a = AdviseOn(Make({{"update_interval", "weekly"}, {"remote_updates", "false"}}));
  EXPECT_EQ(a.rules[4].decides, Placement::kCloud);
  const Advice b = AdviseOn(Make({{"update_interval", "weekly"}}));
  EXPECT_EQ(b.rules[4].decides, Placement::kNone);
  const Advice c = AdviseOn(Make({{"large_downloads", "no"}}));
  EXPECT_EQ(c.rules[4].decides, Placement::kCloud);
}

TEST(Advise, UnreliableNetworkIsARequirement) {
  const Advice a = AdviseOn(Make({{"network", "unreliable"}, {"requests_per_day", "100"}}));
  EXPECT_EQ(a.rules[0].decides, Placement::kEdge);
  EXPECT_TRUE(a.rules[0].hard);
  EXPECT_EQ(a.verdict, Placement::kEdge);
}

TEST(Advise, CostArithmeticAndTheCrossover) {
  AdviseWorkload w = Make({{"tokens_per_request", "1000"},
                           {"cloud_price", "2"},
                           {"box_lifetime", "4"},
                           {"power_price", "0.25"}});
  // 1000 requests/day x 1000 tokens x 30.44 days x $2 per million = $60.88.
  EXPECT_NEAR(CloudUsdPerMonth(w, 1000), 60.88, 1e-9);
  // $960 over 48 months = $20, plus 100 W x 730.56 h x $0.25/kWh = $18.264.
  EXPECT_NEAR(BoxUsdPerMonth(w, 960, 100), 20 + 18.264, 1e-9);
  // Capacity 1M tokens/day: 1,500 requests/day need 2 boxes.
  EXPECT_NEAR(LocalUsdPerMonth(w, 1500, 10, 1e6), 20, 1e-9);
  EXPECT_NEAR(LocalUsdPerMonth(w, 500, 10, 1e6), 10, 1e-9);
  // At the reported crossover the two monthly costs are equal.
  const Advice a = AdviseOn(Make({{"model_size", "1B"}, {"requests_per_day", "10M"}}));
  ASSERT_GT(a.cost.crossover_requests_per_day, 0);
  EXPECT_NEAR(CloudUsdPerMonth(a.workload, a.cost.crossover_requests_per_day),
              a.cost.box_usd_per_month, 1e-6);
}

TEST(Advise, TypicalModelsGrowWithTheirSize) {
  const ModelSpec one = TypicalModel(1e9), seventy = TypicalModel(70e9);
  EXPECT_NEAR(one.weight_bytes / 1e9, 0.6, 0.01);  // 1B x 4.8 bits
  EXPECT_NEAR(seventy.weight_bytes / 1e9, 42, 0.1);
  EXPECT_GT(seventy.n_layers, one.n_layers);
}

// --- Outputs ------------------------------------------------------------

TEST(AdviceReport, TextJsonHtmlAndChart) {
  const Advice a = AdviseOn(Make({{"name", "voice <assistant>"},
                                  {"response_budget", "300ms"},
                                  {"cloud_rtt", "120ms"},
                                  {"model_size", "70B"},
                                  {"easy_share", "80%"},
                                  {"requests_per_day", "1M"}}));
  const std::string text = AdviceText(a);
  EXPECT_TRUE(Contains(text, "Verdict:  HYBRID"));
  for (const char* q : {"1. Immediacy", "2. Data boundary", "3. Required intelligence",
                        "4. User scale and cost", "5. Update frequency", "6. Offline"})
    EXPECT_TRUE(Contains(text, q)) << q;
  const auto j = AdviceJson(a);
  EXPECT_EQ(j["verdict"], "hybrid");
  EXPECT_EQ(j["rules"].size(), 6u);
  EXPECT_EQ(j["rules"][0]["decides"], "edge");
  EXPECT_TRUE(j["rules"][0]["requirement"].get<bool>());
  const std::string html = AdviceHtml(a);
  EXPECT_TRUE(Contains(html, "voice &lt;assistant&gt;"));
  EXPECT_TRUE(Contains(html, "<table>"));
  EXPECT_TRUE(Contains(html, "<svg"));
  EXPECT_TRUE(Contains(html, "Starting routing file"));
  const std::string svg = CostChartSvg(a);
  EXPECT_TRUE(Contains(svg, "crossover"));
  EXPECT_TRUE(Contains(svg, "this workload 1M/day"));
  EXPECT_FALSE(Contains(svg, "e+"));
}

TEST(AdviceReport, HybridRoutingFileLoadsInTheRouter) {
  const Advice a = AdviseOn(Make({{"name", "voice assistant"},
                                  {"response_budget", "300ms"},
                                  {"cloud_rtt", "120ms"},
                                  {"model_size", "70B"},
                                  {"easy_share", "80%"}}));
  ASSERT_EQ(a.verdict, Placement::kHybrid);
  const std::string path = outpost::testing::TempPath("_advise_routing.yaml");
  std::ofstream(path) << HybridRoutingYaml(a);
  auto cfg = router::LoadRoutingConfig(path);
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  ASSERT_EQ(cfg->upstreams.size(), 1u);
  EXPECT_EQ(cfg->upstreams[0].name, "central");
  EXPECT_TRUE(cfg->policy.cascade);
  EXPECT_EQ(cfg->policy.default_latency_budget_ms, 300);
  EXPECT_EQ(cfg->policy.aliases.at("large"), "central");
  std::filesystem::remove(path);
}

// --- Bad input ------------------------------------------------------------

TEST(AdviseWorkloadInput, BadFieldsNameTheKey) {
  const struct {
    const char* key;
    const char* value;
    const char* part;
  } kBad[] = {
      {"response_budget", "soon", "'response_budget': 'soon' is not a duration"},
      {"response_budget", "0ms", "positive duration"},
      {"response_budget", "6003333330000000ms", "up to 24h"},
      {"cloud_ttft", "25h", "up to 24h"},
      {"cloud_rtt", "-5ms", "'cloud_rtt'"},
      {"network", "flaky", "reliable or unreliable"},
      {"speed", "fast", "a speed"},
      {"data_boundary", "planet", "device, site, organisation, none"},
      {"model_size", "huge", "a parameter count"},
      {"model_size", "-3B", "a parameter count"},
      {"easy_share", "120%", "between 0 and 100%"},
      {"requests_per_day", "0", "positive count"},
      {"requests_per_day", "1e15", "up to 1000B"},
      {"model_size", "1e20", "up to 10T"},
      {"box_lifetime", "200", "50 years"},
      {"tokens_per_request", "many", "positive token count"},
      {"cloud_price", "free", "USD per million tokens"},
      {"box_price", "-100", "positive price"},
      {"box_lifetime", "3 days", "a lifetime"},
      {"update_interval", "20y", "up to 10 years"},
      {"box_lifetime", "0", "a lifetime"},
      {"utilisation", "0", "above 0"},
      {"update_interval", "sometimes", "an interval"},
      {"remote_updates", "maybe", "true or false"},
      {"offline", "2", "true or false"},
      {"colour", "blue", "unknown key 'colour'"},
  };
  for (const auto& b : kBad) {
    AdviseWorkload w;
    const Status st = SetAdviseField(&w, b.key, b.value);
    EXPECT_FALSE(st.ok()) << b.key << "=" << b.value;
    EXPECT_TRUE(Contains(st.message(), b.part)) << st.message();
    EXPECT_EQ(st.param(), b.key);
  }
}

TEST(AdviseWorkloadInput, YamlFileAndItsErrors) {
  const std::string good = outpost::testing::TempPath("_advise_good.yaml");
  std::ofstream(good) << "name: hospital reports\ndata_boundary: organization\n"
                         "model_size: 70B\nrequests_per_day: 3k\nupdate_interval: 6mo\n"
                         "offline: no\ncloud_price: $0.60\n";
  auto w = LoadAdviseWorkload(good);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->name, "hospital reports");
  EXPECT_EQ(w->boundary, DataBoundary::kOrganisation);
  EXPECT_DOUBLE_EQ(w->model_params, 70e9);
  EXPECT_DOUBLE_EQ(w->requests_per_day, 3000);
  EXPECT_NEAR(w->update_interval_days, 182.6, 0.1);
  EXPECT_DOUBLE_EQ(w->cloud_usd_per_mtok, 0.6);

  const struct {
    const char* body;
    const char* part;
  } kBad[] = {
      {"- a\n- b\n", "expected a mapping"},
      {"model_size: [1, 2]\n", "'model_size' must be a single value"},
      {"speed: warp 9\n", "'speed'"},
      {"nope: 1\n", "unknown key 'nope'"},
      {"model_size: 7B\n  bad: indent\n", "line"},
  };
  for (const auto& b : kBad) {
    const std::string path = outpost::testing::TempPath("_advise_bad.yaml");
    std::ofstream(path) << b.body;
    auto r = LoadAdviseWorkload(path);
    ASSERT_FALSE(r.ok()) << b.body;
    EXPECT_TRUE(Contains(r.status().message(), b.part)) << r.status().message();
    EXPECT_TRUE(Contains(r.status().message(), path)) << r.status().message();
  }
  EXPECT_FALSE(LoadAdviseWorkload("/nonexistent/no_such_workload.yaml").ok());
}

}  // namespace
}  // namespace outpost::planner

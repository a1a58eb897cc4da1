#include "outpost/planner/planner.h"

#include <gtest/gtest.h>

#include "mocks/temp_file.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "outpost/planner/hardware.h"
#include "outpost/planner/report.h"
#include "outpost/scheduler/capacity.h"

namespace outpost::planner {
namespace {

HardwareProfile Box(double mem_gb, double bw_gbps, double tops = 1000) {
  HardwareProfile h;
  h.name = "test";
  h.memory_bytes = static_cast<uint64_t>(mem_gb * 1e9);
  h.bandwidth_bytes_per_s = bw_gbps * 1e9;
  h.tops = tops;
  return h;
}

TEST(DecodeCeiling, FourGBModelAtHundredGBps) {
  // 4 GB read per token at 100 GB/s: 40 ms/token, 25 tokens/s.
  EXPECT_DOUBLE_EQ(DecodeMsPerToken(4e9, 100e9), 40.0);
  EXPECT_DOUBLE_EQ(1000.0 / DecodeMsPerToken(4e9, 100e9), 25.0);
  // Twice the bandwidth, twice the speed.
  EXPECT_DOUBLE_EQ(DecodeMsPerToken(4e9, 200e9), 20.0);
}

TEST(DecodeCeiling, SeventyBAtEightBitsOnThreeTBps) {
  // 70 GB on 3 TB/s: about 23 ms/token, about 43 tokens/s.
  const double ms = DecodeMsPerToken(70e9, 3e12);
  EXPECT_NEAR(ms, 23.3, 0.1);
  EXPECT_NEAR(1000.0 / ms, 42.9, 0.1);
}

TEST(Plan, SpeedGateUsesWeightsPlusKvAndTheRealisticBand) {
  auto m = DescribeModel("4GB", 8e9, 4.0, 32, 8, 128);  // 8B params x 4 bits = 4 GB
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->weight_bytes, 4'000'000'000u);
  Workload w;
  w.context = 1;  // negligible KV: the pure weights case
  w.peak_sessions = 1;
  const auto r = Plan(*m, Box(64, 100), w, {});
  EXPECT_NEAR(r.speed.ceiling_ms_per_token, 40.0, 0.01);
  EXPECT_NEAR(r.speed.ceiling_tps, 25.0, 0.01);
  EXPECT_NEAR(r.speed.low_tps, 15.0, 0.01);   // 60%
  EXPECT_NEAR(r.speed.high_tps, 17.5, 0.01);  // 70%
  // With a 4096-token context the KV read is added: 32 x 8 x 256 x 2 = 131 kB/token.
  w.context = 4096;
  const auto r2 = Plan(*m, Box(64, 100), w, {});
  EXPECT_EQ(r2.speed.bytes_per_token, 4'000'000'000ull + 131072ull * 4096ull);
  EXPECT_LT(r2.speed.ceiling_tps, 25.0);
}

TEST(Plan, FitGateWorkedExampleSevenBFourBitSixteenSessions) {
  // 7B at 4 bits ~ 4 GB (we take 4.57 bits/weight as Q4_K_M-like to land on 4 GB);
  // 16 sessions x 0.4 GB = 6.4 GB; 10.4 GB at peak; 20% headroom -> ~12.5 GB.
  auto m = DescribeModel("7B", 7e9, 32.0 / 7.0, 32, 8, 128);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->weight_bytes, 4'000'000'000u);
  Workload w;
  w.peak_sessions = 16;
  // 0.4 GB per session: 131072 bytes/token x 3052 tokens ~ 0.4 GB.
  w.context = 3052;
  const auto r = Plan(*m, Box(16, 100), w, {});
  EXPECT_NEAR(r.fit.kv_bytes_per_session / 1e9, 0.4, 0.001);
  EXPECT_NEAR(r.fit.peak_bytes / 1e9, 10.4, 0.01);
  EXPECT_NEAR(r.fit.required_bytes / 1e9, 12.48, 0.02);
  EXPECT_TRUE(r.fit.fits);                              // 16 GB box
  EXPECT_FALSE(Plan(*m, Box(8, 100), w, {}).fit.fits);  // 8 GB box
  const auto small = Plan(*m, Box(8, 100), w, {});
  EXPECT_GT(small.fit.max_sessions, 0);
  EXPECT_LT(small.fit.max_sessions, 16);
  EXPECT_NE(small.fit.advice.find("sessions at"), std::string::npos);
}

// For a GGUF at hand the plan counts the runtime (compute scratch, a logits
// row per session, allowance) as `serve` does, so the sessions it says fit
// are the sessions scheduler::PlanCapacity admits under the same budget, and
// its deploy figure is that budget.
TEST(Plan, FitGateCountsTheRuntimeAsServePlansIt) {
  auto m = DescribeModel("135M", 135e6, 5.74, 30, 3, 64);
  ASSERT_TRUE(m.ok());
  m->runtime_bytes = 83ull << 20;
  m->runtime_bytes_per_session = 49152 * 4;  // one f32 logits row
  m->runtime_source = "test";
  Workload w;
  w.context = 2048;
  w.peak_sessions = 16;
  HardwareProfile box = Box(0, 20);
  box.memory_bytes = 640ull << 20;
  const auto r = Plan(*m, box, w, {});
  const uint64_t kv = r.fit.kv_bytes_per_session;
  EXPECT_EQ(r.fit.runtime_bytes, m->runtime_bytes + 16 * m->runtime_bytes_per_session);
  EXPECT_EQ(r.fit.peak_bytes, m->weight_bytes + r.fit.runtime_bytes + 16 * kv);
  // Without the runtime the same box "fits" more sessions than serve admits.
  ModelSpec bare = *m;
  bare.runtime_bytes = bare.runtime_bytes_per_session = 0;
  EXPECT_GT(Plan(bare, box, w, {}).fit.max_sessions, r.fit.max_sessions);

  scheduler::CapacityInputs in;
  in.weight_bytes = m->weight_bytes;
  in.kv_bytes_per_token = r.fit.kv_bytes_per_token;
  in.ctx_per_session = w.context;
  in.memory_budget_bytes = box.memory_bytes;
  in.headroom_fraction = w.headroom;
  const auto admits = [&](int32_t n) {
    in.overhead_bytes = m->runtime_bytes + m->runtime_bytes_per_session * n;
    return scheduler::PlanCapacity(in, n, 16).ok();
  };
  ASSERT_GT(r.fit.max_sessions, 1);
  EXPECT_TRUE(admits(r.fit.max_sessions));
  EXPECT_FALSE(admits(r.fit.max_sessions + 1));

  // The deploy figure is the budget serve needs for the peak: no flat
  // allowance on top (it is counted), and a budget under it admits fewer.
  w.peak_sessions = 4;
  const auto four = Plan(*m, box, w, {});
  const DeployMemory d = DeployMemoryFor(four);
  EXPECT_EQ(d.request_bytes, four.fit.required_bytes);
  in.memory_budget_bytes = d.request_bytes;
  EXPECT_TRUE(admits(4));
  in.memory_budget_bytes = d.request_bytes - (1 << 20);
  EXPECT_FALSE(admits(4));
}

TEST(Plan, WeightsThatDoNotFitSayUseASmallerModel) {
  auto m = DescribeModel("70B", 70e9, 8, 80, 8, 128);
  ASSERT_TRUE(m.ok());
  const auto r = Plan(*m, Box(24, 300), Workload{}, {});
  EXPECT_FALSE(r.fit.fits);
  EXPECT_EQ(r.fit.max_sessions, 0);
  EXPECT_NE(r.fit.advice.find("weights alone"), std::string::npos);
}

TEST(Plan, ConcurrencySharesTheWeightReadUntilComputeBinds) {
  auto m = DescribeModel("7B", 7e9, 4.5, 32, 8, 128);
  ASSERT_TRUE(m.ok());
  Workload w;
  w.peak_sessions = 64;
  w.context = 2048;
  const auto r = Plan(*m, Box(80, 100, /*tops=*/4), w, {});
  ASSERT_GE(r.concurrency.points.size(), 3u);
  // Aggregate grows with sessions; per-user falls.
  EXPECT_GT(r.concurrency.points[2].aggregate_tps, r.concurrency.points[0].aggregate_tps * 2);
  EXPECT_LT(r.concurrency.points[2].per_user_tps, r.concurrency.points[0].per_user_tps);
  EXPECT_GT(r.concurrency.compute_bound_from, 1);  // 4 TOPS binds somewhere below 64
  EXPECT_FALSE(r.concurrency.points.front().compute_bound);
  EXPECT_TRUE(r.concurrency.at_peak.compute_bound);
  EXPECT_NE(r.concurrency.overflow_advice.find("queue"), std::string::npos);
}

TEST(Plan, CalibrationReplacesTheBand) {
  auto m = DescribeModel("x", 1e9, 8, 16, 4, 64);
  ASSERT_TRUE(m.ok());
  Calibration c;
  c.decode_efficiency = 0.5;
  c.source = "bench.json";
  const auto r = Plan(*m, Box(8, 100), Workload{}, c);
  EXPECT_DOUBLE_EQ(r.speed.expected_tps, r.speed.ceiling_tps * 0.5);
  EXPECT_NE(r.speed.efficiency_source.find("bench.json"), std::string::npos);
}

TEST(DescribeModel, BadInputsNameTheField) {
  EXPECT_EQ(DescribeModel("x", -7e9, 4, 32, 8, 128).status().param(), "params");
  EXPECT_EQ(DescribeModel("x", 7e9, 0, 32, 8, 128).status().param(), "bits");
  EXPECT_EQ(DescribeModel("x", 7e9, 4, -1, 8, 128).status().param(), "layers");
  EXPECT_EQ(DescribeModel("x", 7e9, 4, 32, 0, 128).status().param(), "kv-heads");
  EXPECT_EQ(DescribeModel("x", 7e9, 4, 32, 8, 0).status().param(), "head-dim");
}

TEST(Hardware, BuiltinsCoverTheFourClassesWithRealFigures) {
  std::set<std::string> classes;
  for (const auto& p : BuiltinProfiles()) {
    classes.insert(p.device_class);
    EXPECT_GT(p.memory_bytes, 0u) << p.name;
    EXPECT_GT(p.bandwidth_bytes_per_s, 0) << p.name;
    EXPECT_GT(p.tops, 0) << p.name;
    EXPECT_GT(p.power_w, 0) << p.name;
    EXPECT_FALSE(p.source.empty()) << p.name;
  }
  EXPECT_EQ(classes, (std::set<std::string>{"embedded-soc", "mini-pc", "edge-gpu", "rack-gpu"}));
  auto l4 = FindProfile("nvidia-l4", {});
  ASSERT_TRUE(l4.ok());
  EXPECT_DOUBLE_EQ(l4->bandwidth_bytes_per_s, 300e9);
  auto missing = FindProfile("cray-1", {});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("nvidia-l4"), std::string::npos);
}

TEST(Hardware, ParseUnits) {
  EXPECT_DOUBLE_EQ(*ParseBandwidth("102GB/s"), 102e9);
  EXPECT_DOUBLE_EQ(*ParseBandwidth("3.35TB/s"), 3.35e12);
  EXPECT_FALSE(ParseBandwidth("fast").ok());
  EXPECT_FALSE(ParseBandwidth("-5GB/s").ok());
  EXPECT_FALSE(ParseBandwidth("5 furlongs").ok());
  EXPECT_DOUBLE_EQ(*ParsePower("25W"), 25);
  EXPECT_DOUBLE_EQ(*ParsePower("0.7kW"), 700);
  EXPECT_FALSE(ParsePower("hot").ok());
}

TEST(Hardware, UserFileAddsProfilesAndRejectsBadEntries) {
  const auto good = testing::TempPath("_hw_good.yaml");
  std::ofstream(good)
      << "- name: my-box\n  memory: 16GiB\n  bandwidth: 120GB/s\n  tops: 50\n  power: 30W\n"
         "  price: $1200\n";
  auto p = LoadProfiles(good);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->size(), 1u);
  EXPECT_EQ(FindProfile("my-box", *p)->memory_bytes, 16ull << 30);
  EXPECT_DOUBLE_EQ(FindProfile("my-box", *p)->price_usd, 1200);
  const auto bad = testing::TempPath("_hw_bad.yaml");
  std::ofstream(bad) << "- name: x\n  memory: lots\n  bandwidth: 1GB/s\n";
  auto b = LoadProfiles(bad);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("'memory'"), std::string::npos);
  std::ofstream(bad) << "- name: x\n  memory: 1GiB\n  bandwidth: 1GB/s\n  colour: red\n";
  EXPECT_NE(LoadProfiles(bad).status().message().find("unknown key 'colour'"), std::string::npos);
  std::ofstream(bad) << "- name: x\n  memory: 1GiB\n  bandwidth: 1GB/s\n  price: free\n";
  EXPECT_NE(LoadProfiles(bad).status().message().find("'price' must be a positive number"),
            std::string::npos);
}

TEST(Report, JsonTextAndHtmlCarryTheGates) {
  auto m = DescribeModel("7B", 7e9, 4.5, 32, 8, 128);
  const auto r = Plan(*m, *FindProfile("jetson-agx-orin-64gb", {}), Workload{}, {});
  const auto j = RenderJson(r);
  for (const char* k : {"fit", "speed", "concurrency", "model", "hardware", "workload"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_GT(j["speed"]["ceiling_tps"].get<double>(), 0);
  const std::string text = RenderText(r);
  EXPECT_NE(text.find("Gate 1  fit"), std::string::npos);
  EXPECT_NE(text.find("Gate 3  concurrency"), std::string::npos);
  // Gates 2 and 3 assume different context fill; each says which.
  EXPECT_NE(text.find("one session's KV at the full 4096 tokens: the worst case"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("each session's KV half full on average (2048 of 4096 tokens)"),
            std::string::npos)
      << text;
  const std::string html = RenderHtml({r, r});
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("Comparison"), std::string::npos);
  EXPECT_NE(html.find("polyline"), std::string::npos);
  EXPECT_NE(html.find("<table>"), std::string::npos);
  EXPECT_EQ(html.find("<pre>"), std::string::npos);  // tables, not the text report in a box
  // The deploy figures for a described model (runtime unknown): the peak with
  // headroom + a flat runtime allowance, and a quarter more as the limit.
  const DeployMemory d = DeployMemoryFor(r);
  EXPECT_EQ(d.request_bytes, r.fit.required_bytes + kRuntimeOverheadBytes);
  EXPECT_EQ(d.limit_bytes, d.request_bytes + d.request_bytes / 4);
  EXPECT_EQ(MebibytesText(799ull << 20), "799M");
  EXPECT_EQ(MebibytesText((799ull << 20) + 1), "800M");
  EXPECT_EQ(j["deploy"]["memory_request_bytes"].get<uint64_t>(), d.request_bytes);
  EXPECT_NE(text.find("MemoryHigh=" + MebibytesText(d.request_bytes)), std::string::npos) << text;
}

}  // namespace
}  // namespace outpost::planner

#include "outpost/telemetry/spool.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "outpost/telemetry/summary.h"

namespace outpost::telemetry {
namespace {

constexpr int64_t kT0 = 1'700'000'000'000;  // Unix ms
constexpr int64_t kHour = 3'600'000;

class SpoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static int n = 0;
    dir_ = std::filesystem::temp_directory_path() /
           ("outpost_spool_" + std::to_string(getpid()) + "_" + std::to_string(n++));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::unique_ptr<Spool> Open(uint64_t max_bytes = 64u << 20) {
    auto s = Spool::Open((dir_ / "spool.db").string(), max_bytes, MergeSummaries);
    EXPECT_TRUE(s.ok()) << s.status().message();
    return std::move(s).value();
  }
  // A summary body of about `pad` bytes whose window saw `requests`.
  static std::string Summary(int64_t start, int64_t end, int requests, size_t pad = 0) {
    nlohmann::json s = {
        {"v", 1},
        {"start_ms", start},
        {"end_ms", end},
        {"counters", nlohmann::json::array()},
        {"histograms", nlohmann::json::array()},
        {"gauges", nlohmann::json::array()},
        {"window",
         {{"requests", requests},
          {"errors", 0},
          {"completion_tokens", 10 * requests},
          {"prompt_tokens", 0},
          {"energy_j", 0},
          {"ttft", {{"bounds", {1, 2}}, {"counts", {requests, 0, 0}}, {"sum", 0.5}}},
          {"duration", {{"bounds", {1, 2}}, {"counts", {0, requests, 0}}}}}},
        {"pad", std::string(pad, 'x')}};
    return s.dump();
  }
  // Takes and acknowledges everything; returns the sequence numbers each
  // record accounts for (a summary its folded range, a gap its lost range).
  static std::set<int64_t> Drain(Spool* spool, double* requests = nullptr) {
    std::set<int64_t> covered;
    while (auto r = spool->Take(false)) {
      int64_t lo = r->first_seq;
      const auto b = nlohmann::json::parse(r->body);
      if (r->kind == "gap" && b.contains("from_seq")) {
        for (int64_t s = b["from_seq"].get<int64_t>(); s <= b["to_seq"].get<int64_t>(); ++s)
          covered.insert(s);
      }
      if (r->kind == "summary" && requests != nullptr)
        *requests += b["window"]["requests"].get<double>();
      for (int64_t s = lo; s <= r->seq; ++s) covered.insert(s);
      EXPECT_TRUE(spool->Ack(r->seq).ok());
    }
    return covered;
  }
  std::filesystem::path dir_;
};

TEST_F(SpoolTest, SequenceNumbersRiseAndSurviveReopening) {
  {
    auto spool = Open();
    EXPECT_EQ(*spool->Append("summary", "boot-a", kT0, Summary(kT0, kT0, 1)), 1);
    EXPECT_EQ(*spool->Append("event", "boot-a", kT0, R"({"name":"x"})"), 2);
    auto r = spool->Take(false);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->seq, 1);
    ASSERT_TRUE(spool->Ack(1).ok());
  }
  auto spool = Open();  // a restart: the next number and the acknowledged position are kept
  const SpoolStats s = spool->Stats();
  EXPECT_EQ(s.records, 1);
  EXPECT_EQ(s.acked_records, 1);
  EXPECT_EQ(s.acked_seq_max, 1);
  EXPECT_EQ(s.newest_seq, 2);
  EXPECT_EQ(*spool->Append("summary", "boot-b", kT0 + 1, Summary(kT0, kT0 + 1, 1)), 3);
  auto newest = spool->Take(true);
  ASSERT_TRUE(newest);
  EXPECT_EQ(newest->seq, 3);
  EXPECT_EQ(newest->boot_id, "boot-b");
  spool->Release(3);
  // An unknown number changes nothing.
  EXPECT_TRUE(spool->Ack(99).ok());
  EXPECT_EQ(spool->Stats().acked_records, 1);
}

TEST_F(SpoolTest, PastEightyPercentSummariesOfOneHourMergeKeepingTotals) {
  auto spool = Open(64u << 10);
  int total_requests = 0;
  // 40 one-minute summaries of ~2 KiB each (80 KiB > the 64 KiB bound), all
  // within two hours of one boot.
  for (int i = 0; i < 40; ++i) {
    const int64_t end = kT0 + (i + 1) * 60'000;
    ASSERT_TRUE(
        spool->Append("summary", "boot", end, Summary(end - 60'000, end, i % 3, 2000)).ok());
    total_requests += i % 3;
  }
  const SpoolStats s = spool->Stats();
  EXPECT_GT(s.merged_records, 0);
  EXPECT_EQ(s.dropped_records, 0);  // merging made enough room
  EXPECT_LE(s.bytes, s.max_bytes);
  EXPECT_LT(s.records, 40);
  double requests = 0;
  const auto covered = Drain(spool.get(), &requests);
  EXPECT_EQ(requests, total_requests) << "a merge must keep the window totals";
  for (int64_t seq = 1; seq <= 40; ++seq) EXPECT_TRUE(covered.count(seq)) << seq;
}

TEST_F(SpoolTest, WhenMergingCannotHelpTheOldestGiveWayToAGapRecord) {
  auto spool = Open(64u << 10);
  // One summary per day, each of its own boot: nothing can be merged.
  for (int i = 0; i < 40; ++i) {
    const int64_t end = kT0 + i * 48 * kHour;
    ASSERT_TRUE(
        spool->Append("summary", "boot-" + std::to_string(i), end, Summary(end, end, 1, 2000))
            .ok());
  }
  const SpoolStats s = spool->Stats();
  EXPECT_GT(s.dropped_records, 0);
  EXPECT_GE(s.gap_records, 1);
  EXPECT_LE(s.bytes, s.max_bytes);
  // The first record left is a gap record that names the lost range.
  auto first = spool->Take(false);
  ASSERT_TRUE(first);
  spool->Release(first->seq);
  bool saw_gap = false;
  int64_t next_from = 1;  // each gap starts where the records it followed ended
  std::set<int64_t> covered;
  while (auto r = spool->Take(false)) {
    if (r->kind == "gap") {
      const auto g = nlohmann::json::parse(r->body);
      EXPECT_EQ(g["reason"], "spool_full");
      if (!saw_gap) {
        EXPECT_EQ(g["from_seq"], 1);
      }
      EXPECT_GE(g["from_seq"].get<int64_t>(), next_from);
      next_from = g["to_seq"].get<int64_t>() + 1;
      saw_gap = true;
      EXPECT_GT(g["records"].get<int64_t>(), 0);
      EXPECT_EQ(g["kinds"]["summary"], g["records"]);
      for (int64_t q = g["from_seq"]; q <= g["to_seq"].get<int64_t>(); ++q) covered.insert(q);
    }
    for (int64_t q = r->first_seq; q <= r->seq; ++q) covered.insert(q);
    ASSERT_TRUE(spool->Ack(r->seq).ok());
  }
  EXPECT_TRUE(saw_gap);
  const int64_t last = s.next_seq - 1;
  for (int64_t q = 1; q <= last; ++q) EXPECT_TRUE(covered.count(q)) << q;
}

TEST_F(SpoolTest, TheRecordInFlightIsNeitherMergedNorDropped) {
  auto spool = Open(64u << 10);
  ASSERT_TRUE(spool->Append("summary", "boot", kT0, Summary(kT0, kT0, 7, 2000)).ok());
  auto taken = spool->Take(false);
  ASSERT_TRUE(taken);
  for (int i = 1; i < 60; ++i) {
    const int64_t end = kT0 + i * 1000;
    ASSERT_TRUE(spool->Append("summary", "boot", end, Summary(end, end, 1, 2000)).ok());
  }
  // What was sent is what is acknowledged: record 1, unchanged.
  ASSERT_TRUE(spool->Ack(taken->seq).ok());
  EXPECT_EQ(spool->Stats().acked_records, 1);
  auto next = spool->Take(false);
  ASSERT_TRUE(next);
  EXPECT_GE(next->first_seq, 2) << "nothing may be folded into or out of a record in flight";
}

TEST_F(SpoolTest, ARefusedRecordLeavesAGapRecordNamingIt) {
  auto spool = Open();
  ASSERT_TRUE(spool->Append("summary", "boot", kT0, Summary(kT0, kT0, 1)).ok());
  auto r = spool->Take(false);
  ASSERT_TRUE(spool->Reject(r->seq, "refused: HTTP 400", "boot", kT0 + 5).ok());
  auto gap = spool->Take(false);
  ASSERT_TRUE(gap);
  EXPECT_EQ(gap->kind, "gap");
  EXPECT_EQ(gap->seq, 2);
  const auto g = nlohmann::json::parse(gap->body);
  EXPECT_EQ(g["reason"], "refused: HTTP 400");
  EXPECT_EQ(g["from_seq"], 1);
  EXPECT_EQ(g["to_seq"], 1);
  // A refused gap record goes without a further gap (no loop).
  ASSERT_TRUE(spool->Reject(gap->seq, "refused: HTTP 400", "boot", kT0 + 6).ok());
  EXPECT_EQ(spool->Stats().records, 0);
}

TEST_F(SpoolTest, BadPathAndOversizedRecordsAreClearErrors) {
  auto bad = Spool::Open("/nonexistent-dir/x/spool.db", 1 << 20, MergeSummaries);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("/nonexistent-dir/x/spool.db"), std::string::npos);
  auto spool = Open(64u << 10);
  auto big = spool->Append("event", "boot", kT0, std::string(40u << 10, 'x'));
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("over half the spool"), std::string::npos);
}

TEST(MergeSummaries, AddsWindowsAndCombinesGauges) {
  const nlohmann::json a = {{"start_ms", 1000},
                            {"end_ms", 2000},
                            {"gauges",
                             {{{"name", "q"},
                               {"labels", nlohmann::json::object()},
                               {"min", 0},
                               {"max", 9},
                               {"mean", 3},
                               {"last", 1},
                               {"n", 10}}}},
                            {"window",
                             {{"requests", 4},
                              {"errors", 2},
                              {"completion_tokens", 40},
                              {"prompt_tokens", 8},
                              {"energy_j", 20},
                              {"ttft", {{"bounds", {1}}, {"counts", {4, 0}}, {"sum", 2}}},
                              {"duration", {{"bounds", {1}}, {"counts", {0, 4}}, {"sum", 8}}}}}};
  const nlohmann::json b = {{"start_ms", 2000},
                            {"end_ms", 3000},
                            {"gauges",
                             {{{"name", "q"},
                               {"labels", nlohmann::json::object()},
                               {"min", 2},
                               {"max", 5},
                               {"mean", 4},
                               {"last", 5},
                               {"n", 30}}}},
                            {"window",
                             {{"requests", 6},
                              {"errors", 0},
                              {"completion_tokens", 60},
                              {"prompt_tokens", 12},
                              {"energy_j", 30},
                              {"ttft", {{"bounds", {1}}, {"counts", {0, 6}}, {"sum", 9}}},
                              {"duration", {{"bounds", {1}}, {"counts", {0, 6}}, {"sum", 12}}}}}};
  const auto m = nlohmann::json::parse(MergeSummaries(a.dump(), b.dump()));
  EXPECT_EQ(m["start_ms"], 1000);
  EXPECT_EQ(m["end_ms"], 3000);
  EXPECT_EQ(m["window"]["requests"], 10);
  EXPECT_EQ(m["window"]["errors"], 2);
  EXPECT_DOUBLE_EQ(m["window"]["failure_rate"].get<double>(), 0.2);
  EXPECT_DOUBLE_EQ(m["window"]["energy_per_token_j"].get<double>(), 0.5);
  EXPECT_EQ(m["window"]["ttft"]["counts"], nlohmann::json({4, 6}));
  EXPECT_DOUBLE_EQ(m["window"]["ttft"]["sum"].get<double>(), 11);
  const auto& g = m["gauges"][0];
  EXPECT_EQ(g["min"], 0);
  EXPECT_EQ(g["max"], 9);
  EXPECT_EQ(g["last"], 5);
  EXPECT_DOUBLE_EQ(g["mean"].get<double>(), 3.75);
  EXPECT_EQ(MergeSummaries("not json", b.dump()), b.dump());
}

TEST(WindowQuantile, InterpolatesInsideTheBucket) {
  const nlohmann::json h = {{"bounds", {1, 2, 4}}, {"counts", {0, 10, 0, 0}}};
  EXPECT_DOUBLE_EQ(WindowQuantile(h, 0.5), 1.5);
  EXPECT_EQ(WindowQuantile({{"bounds", {1}}, {"counts", {0, 0}}}, 0.5), -1);
  EXPECT_DOUBLE_EQ(WindowQuantile({{"bounds", {1, 2}}, {"counts", {0, 0, 3}}}, 0.5), 2);
}

}  // namespace
}  // namespace outpost::telemetry

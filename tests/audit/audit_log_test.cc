#include "outpost/audit/audit_log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "mocks/sim_clock.h"
#include "outpost/audit/audit_crypto.h"
#include "outpost/audit/audit_verify.h"

namespace outpost::audit {
namespace {

class AuditTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static int n = 0;
    dir_ = (std::filesystem::temp_directory_path() /
            ("outpost_audit_" + std::to_string(getpid()) + "_" + std::to_string(n++)))
               .string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  AuditOptions Options() {
    AuditOptions o;
    o.dir = dir_;
    o.box_id = "box-1";
    o.checkpoint_every = 4;
    o.checkpoint_interval_ms = 3'600'000;
    return o;
  }
  // Writes `n` request records (checkpoints every 4) and closes the log.
  void Write(int n, AuditOptions o) {
    auto log = AuditLog::Open(o, &clock_);
    ASSERT_TRUE(log.ok()) << log.status().message();
    for (int i = 0; i < n; ++i) {
      (*log)->Append("request", {{"request_id", "chatcmpl-" + std::to_string(i)},
                                 {"tenant", i % 2 ? "clinic" : "plant"},
                                 {"route", "local"},
                                 {"prompt_tokens", 10 + i},
                                 {"completion_tokens", 5}});
    }
  }
  std::vector<std::string> Lines(const std::string& file) {
    std::ifstream in(file);
    std::vector<std::string> out;
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
  }
  void Put(const std::string& file, const std::vector<std::string>& lines) {
    std::ofstream out(file, std::ios::trunc);
    for (const auto& l : lines) out << l << "\n";
  }
  VerifyReport Verify(VerifyOptions o = {}) { return VerifyAuditFiles(AuditFilesIn(dir_), o); }
  std::string First() { return AuditFilesIn(dir_).front(); }

  std::string dir_;
  outpost::testing::SimClock clock_;
};

TEST_F(AuditTest, AnUntouchedLogVerifiesWithItsSignedCheckpoints) {
  Write(10, Options());
  const auto r = Verify();
  ASSERT_TRUE(r.ok) << r.error;
  // 10 records, a checkpoint after every 4, and a last one on close.
  EXPECT_EQ(r.checkpoints, 3);
  EXPECT_EQ(r.records, 13);
  EXPECT_EQ(r.last_seq, 13);
  EXPECT_TRUE(r.warnings.empty());
  // No content: the records hold what was listed, never a prompt.
  for (const auto& l : Lines(First())) {
    const auto j = nlohmann::json::parse(l);
    EXPECT_EQ(j["hash"].get<std::string>().size(), 64u);
  }
}

struct Tamper {
  const char* name;
  const char* kind;  // what verify must call it
  int bad_line;      // the line it must name (1-based)
};

TEST_F(AuditTest, EveryKindOfTamperingIsCaughtAtTheFirstBadLine) {
  Write(10, Options());
  const auto pristine = Lines(First());
  const std::vector<Tamper> cases = {
      {"edit a token count", "modified", 3},      {"delete a record", "deleted", 3},
      {"insert a copy", "inserted/reordered", 4}, {"swap two records", "inserted/reordered", 2},
      {"garble a line", "modified", 6},           {"delete the first record", "deleted", 1},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto lines = pristine;
    const std::string what = c.name;
    if (what == "edit a token count") {
      auto j = nlohmann::json::parse(lines[2]);
      j["completion_tokens"] = 500;
      lines[2] = j.dump();
    } else if (what == "delete a record") {
      lines.erase(lines.begin() + 2);
    } else if (what == "insert a copy") {
      lines.insert(lines.begin() + 3, lines[1]);
    } else if (what == "swap two records") {
      std::swap(lines[1], lines[2]);
    } else if (what == "garble a line") {
      lines[5] = lines[5].substr(0, 40) + "}";
    } else if (what == "delete the first record") {
      lines.erase(lines.begin());
    }
    Put(First(), lines);
    const auto r = Verify();
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.kind, c.kind) << r.error;
    EXPECT_NE(r.error.find(First() + ":" + std::to_string(c.bad_line) + ":"), std::string::npos)
        << r.error;
  }
  Put(First(), pristine);
  EXPECT_TRUE(Verify().ok);
}

TEST_F(AuditTest, TruncationAndAWholesaleRewriteAreCaughtByTheCentresCheckpoint) {
  Write(10, Options());
  const auto pristine = Lines(First());
  // The centre holds the checkpoint after record 8 (line 10 in the file).
  const auto cp = nlohmann::json::parse(pristine[9]);
  ASSERT_EQ(cp["type"], "checkpoint");
  VerifyOptions o;
  o.expect_count = cp["count"].get<int64_t>();
  o.expect_head = cp["head"].get<std::string>();
  EXPECT_TRUE(Verify(o).ok);
  // Cutting the tail leaves a chain that verifies alone...
  Put(First(), {pristine.begin(), pristine.begin() + 5});
  EXPECT_TRUE(Verify().ok);
  // ...but not against the checkpoint.
  auto r = Verify(o);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.kind, "truncated");
  // A rewrite with every hash recomputed: the chain holds, the checkpoint's
  // signature does not (no key), and the centre's head does not.
  std::vector<std::string> forged;
  std::string prev = GenesisHash();
  for (auto l : pristine) {
    auto j = nlohmann::json::parse(l);
    if (j["type"] == "request") j["completion_tokens"] = 1;
    j["prev"] = prev;
    if (j["type"] == "checkpoint") j["head"] = prev;
    j.erase("hash");
    j["hash"] = ChainHash(prev, j.dump());
    prev = j["hash"];
    forged.push_back(j.dump());
  }
  Put(First(), forged);
  r = Verify();
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.kind, "signature") << r.error;
  EXPECT_NE(r.error.find(":5:"), std::string::npos) << r.error;  // the first checkpoint
}

TEST_F(AuditTest, ACrashMidWriteLeavesALogThatVerifiesAndContinues) {
  Write(5, Options());
  const std::string file = First();
  const auto lines = Lines(file);
  {
    std::ofstream out(file, std::ios::app);
    out << lines.back().substr(0, 50);  // half a record, no newline
  }
  auto r = Verify();
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("incomplete last record"), std::string::npos);
  // The next start cuts the torn tail and chains on.
  Write(3, Options());
  r = Verify();
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_EQ(r.last_seq, static_cast<int64_t>(lines.size()) + 3 + 1);
}

TEST_F(AuditTest, RotationKeepsTheChainAcrossFiles) {
  AuditOptions o = Options();
  o.max_file_bytes = 1500;
  Write(20, o);
  const auto files = AuditFilesIn(dir_);
  ASSERT_GT(files.size(), 2u);
  EXPECT_TRUE(Verify().ok);
  // A missing middle file is a deletion.
  std::filesystem::remove(files[1]);
  const auto r = Verify();
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.kind, "deleted");
  // Pruning the oldest file is allowed when said so.
  std::filesystem::remove(files[0]);
  VerifyOptions partial;
  partial.allow_partial = true;
  EXPECT_TRUE(VerifyAuditFiles({files.begin() + 2, files.end()}, partial).ok);
  EXPECT_FALSE(VerifyAuditFiles({files.begin() + 2, files.end()}, {}).ok);
}

TEST_F(AuditTest, OneWriterPerDirectoryAndCheckpointsReachTheListener) {
  auto log = AuditLog::Open(Options(), &clock_);
  ASSERT_TRUE(log.ok());
  auto second = AuditLog::Open(Options(), &clock_);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("another process"), std::string::npos);
  std::vector<Checkpoint> got;
  (*log)->SetCheckpointListener([&](const Checkpoint& c) { got.push_back(c); });
  for (int i = 0; i < 4; ++i) (*log)->Append("request", {{"n", i}});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].count, 4);
  EXPECT_TRUE(VerifySignature((*log)->public_pem(), CheckpointMessage("box-1", 4, got[0].head),
                              got[0].sig));
  EXPECT_FALSE(VerifySignature((*log)->public_pem(), CheckpointMessage("box-1", 5, got[0].head),
                               got[0].sig));
}

}  // namespace
}  // namespace outpost::audit

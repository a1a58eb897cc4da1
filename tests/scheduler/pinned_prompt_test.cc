// Pinned prompt prefixes on the fake engine: computed and saved at start,
// read back from the file on the next start, restored from the file once
// evicted, recomputed when the file is damaged or gone, kept to their scope.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "scheduler/scheduler_fixture.h"

namespace outpost::scheduler {
namespace {

using testing::Fixture;
using testing::Opts;

const std::string kSystem = "You are the line-side assistant. Answer briefly.";

class PinnedPromptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::path(::testing::TempDir()) /
        ("pinned-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  SchedulerOptions PinOpts(int32_t sessions, std::vector<PinnedPrompt> pinned) const {
    SchedulerOptions o = Opts(sessions, 4, /*batch_size=*/64, /*prefill_chunk=*/64);
    o.prefix_cache = true;
    o.min_copied_prefix = 8;
    o.pinned = std::move(pinned);
    o.pinned_dir = dir_.string();
    o.pinned_key = "model.gguf|1234|f16|128";
    return o;
  }
  // The prompt a chat request with kSystem and `user` becomes.
  static std::vector<engine::Token> Chat(const Fixture& f, const std::string& system,
                                         const std::string& user) {
    std::vector<engine::ChatMessage> m(2);
    m[0].role = "system";
    m[0].content = system;
    m[1].role = "user";
    m[1].content = user;
    auto p = f.sched->engine().ApplyChatTemplate(m, nullptr, engine::ChatOptions());
    EXPECT_TRUE(p.ok());
    return f.sched->engine().Tokenize(p->text, true, true);
  }
  static GenerationResult Run(Fixture& f, std::vector<engine::Token> prompt,
                              std::string scope = "") {
    auto sink = f.Sink("r");
    GenerationRequest req;
    req.prompt = std::move(prompt);
    req.cache_scope = std::move(scope);
    EXPECT_TRUE(f.sched->Submit(std::move(req), sink).ok());
    f.RunToIdle();
    EXPECT_TRUE(sink->done);
    EXPECT_EQ(sink->text, "hello");
    return sink->result;
  }
  std::vector<std::filesystem::path> Files() const {
    std::vector<std::filesystem::path> out;
    if (!std::filesystem::exists(dir_)) return out;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) out.push_back(e.path());
    return out;
  }

  std::filesystem::path dir_;
};

TEST_F(PinnedPromptTest, TheTokensAreWhatEveryChatWithTheSystemMessageStartsWith) {
  Fixture f(PinOpts(2, {}));
  const auto tokens = PinnedTokens(f.sched->engine(), {kSystem, "", "", ""});
  // The fake template: "system: ...\nuser: <text>\nassistant: ".
  const std::string want = "system: " + kSystem + "\nuser: ";
  EXPECT_EQ(std::string(tokens.begin(), tokens.end()), want);
  const auto raw = PinnedTokens(f.sched->engine(), {"", "Q: torque?", "", ""});
  EXPECT_EQ(std::string(raw.begin(), raw.end()), "Q: torque?");
  // The name changes with the model and context key and with the tokens.
  EXPECT_NE(PinnedFileName("a", tokens), PinnedFileName("b", tokens));
  EXPECT_NE(PinnedFileName("a", tokens), PinnedFileName("a", raw));
  EXPECT_EQ(PinnedFileName("a", tokens), PinnedFileName("a", tokens));
}

TEST_F(PinnedPromptTest, ComputedAndSavedAtStartSoTheFirstRequestIsWarm) {
  Fixture f(PinOpts(4, {{kSystem, "", "", ""}}));
  f.sched->WarmPinned();
  EXPECT_EQ(f.engine->saves, 1);
  ASSERT_EQ(Files().size(), 1u);  // no .tmp left beside it
  EXPECT_EQ(Files()[0].extension(), ".kvseq");
  const auto pinned = PinnedTokens(f.sched->engine(), {kSystem, "", "", ""});
  // Held by the last slot, as an ordinary cache entry.
  EXPECT_EQ(f.engine->KvCells(3), static_cast<int32_t>(pinned.size()));
  auto snap = f.sched->Snapshot();
  EXPECT_EQ(snap.pinned_prompts, 1);
  EXPECT_EQ(snap.pinned_tokens, static_cast<int64_t>(pinned.size()));
  EXPECT_EQ(snap.prefix_cache_tokens, static_cast<int64_t>(pinned.size()));

  const size_t before = f.engine->batches.size();
  const GenerationResult r = Run(f, Chat(f, kSystem, "torque for M8?"));
  EXPECT_EQ(r.usage.cached_tokens, static_cast<int32_t>(pinned.size()));
  // Only the user's turn was computed, continuing where the prefix ends.
  for (size_t b = before; b < f.engine->batches.size(); ++b) {
    for (const auto& e : f.engine->batches[b])
      EXPECT_GE(e.pos, static_cast<int32_t>(pinned.size()));
  }
  EXPECT_EQ(f.engine->violations, 0);
}

TEST_F(PinnedPromptTest, TheNextStartReadsTheFileInsteadOfComputing) {
  {
    Fixture first(PinOpts(2, {{kSystem, "", "", ""}, {"", "Q: torque?", "", ""}}));
    first.sched->WarmPinned();
    EXPECT_EQ(first.engine->saves, 2);
  }
  Fixture f(PinOpts(2, {{kSystem, "", "", ""}, {"", "Q: torque?", "", ""}}));
  f.sched->WarmPinned();
  EXPECT_EQ(f.engine->loads, 2);
  EXPECT_EQ(f.engine->saves, 0);
  EXPECT_TRUE(f.engine->batches.empty());  // nothing computed
  EXPECT_EQ(f.sched->Snapshot().pinned_prompts, 2);
  const GenerationResult r = Run(f, Chat(f, kSystem, "hi"));
  EXPECT_EQ(r.usage.cached_tokens,
            static_cast<int32_t>(PinnedTokens(f.sched->engine(), {kSystem, "", "", ""}).size()));
  const std::string raw = "Q: torque? A:";
  EXPECT_EQ(Run(f, {raw.begin(), raw.end()}).usage.cached_tokens, 10);
}

TEST_F(PinnedPromptTest, AnEvictedPrefixIsReadBackFromItsFile) {
  Fixture f(PinOpts(1, {{kSystem, "", "", ""}}));
  f.sched->WarmPinned();
  const auto pinned = PinnedTokens(f.sched->engine(), {kSystem, "", "", ""});
  // Another prompt takes the only slot: the pinned cells are reclaimed.
  const std::string other = "Something else entirely, and long enough to matter.";
  EXPECT_EQ(Run(f, {other.begin(), other.end()}).usage.cached_tokens, 0);
  const int loads = f.engine->loads;
  const size_t before = f.engine->batches.size();
  const GenerationResult r = Run(f, Chat(f, kSystem, "speed?"));
  EXPECT_EQ(r.usage.cached_tokens, static_cast<int32_t>(pinned.size()));
  EXPECT_EQ(f.engine->loads, loads + 1);
  EXPECT_EQ(f.sched->Snapshot().pinned_restores, 1);
  EXPECT_GE(f.engine->batches.at(before).front().pos, static_cast<int32_t>(pinned.size()));
  // A prompt that shares only part of it gets that part.
  const auto partial = Chat(f, "You are the line-side helper.", "x");
  const std::string other2 = "Evict again, please, with another long prompt here.";
  Run(f, {other2.begin(), other2.end()});
  size_t common = 0;
  while (partial[common] == pinned[common]) ++common;
  EXPECT_EQ(Run(f, partial).usage.cached_tokens, static_cast<int32_t>(common));
  EXPECT_EQ(f.engine->violations, 0);
}

TEST_F(PinnedPromptTest, WithSlidingWindowsOnlyAPrefixWithinTheWindowIsCutShort) {
  const std::string other = "Something else entirely, and long enough to matter.";
  for (const int32_t window : {1000, 20}) {
    std::filesystem::remove_all(dir_);
    Fixture f(PinOpts(1, {{kSystem, "", "", ""}}));
    f.engine->sliding_window = window;
    f.sched->WarmPinned();
    const auto pinned = PinnedTokens(f.sched->engine(), {kSystem, "", "", ""});
    // Shares all of the prefix but its last token ("user: " vs "user:\n").
    std::vector<engine::Token> prompt(pinned.begin(), pinned.end() - 1);
    for (char c : std::string("\nwhat now?")) prompt.push_back(c);
    Run(f, {other.begin(), other.end()});
    const int32_t cached = Run(f, prompt).usage.cached_tokens;
    if (window > static_cast<int32_t>(pinned.size())) {
      EXPECT_EQ(cached, static_cast<int32_t>(pinned.size()) - 1) << window;
    } else {
      EXPECT_EQ(cached, 0) << window;  // the window's cells alone cannot be cut earlier
    }
    EXPECT_EQ(f.engine->violations, 0);
  }
}

TEST_F(PinnedPromptTest, ASlotWithACopyStillPendingIsComputedNotRestored) {
  Fixture f(PinOpts(2, {{kSystem, "", "", ""}}));
  f.sched->WarmPinned();
  // Two choices of one prompt take both slots (the pinned cells go); the
  // leader's KV is copied to the other after the step's decode, and both end
  // in that step (max_tokens 1): the copy waits for the next decode.
  auto two = f.Sink("two");
  GenerationRequest req;
  const std::string other = "Something else entirely, and long enough to matter.";
  req.prompt.assign(other.begin(), other.end());
  req.n = 2;
  req.max_tokens = 1;
  ASSERT_TRUE(f.sched->Submit(std::move(req), two).ok());
  while (!two->done) ASSERT_TRUE(f.sched->StepForTest());
  // The next request starts with the pinned prefix; whichever slot it takes
  // has a copy pending, so it is computed rather than read into it.
  const int loads = f.engine->loads;
  EXPECT_EQ(Run(f, Chat(f, kSystem, "hi")).usage.cached_tokens, 0);
  EXPECT_EQ(f.engine->loads, loads);
  EXPECT_EQ(f.engine->violations, 0);
  // The file is still good: once other prompts have taken both slots, the
  // next request that starts with the prefix reads it back.
  for (const std::string p : {"First of two other long prompts, unlike the rest.",
                              "Second of two other long prompts, unlike any."}) {
    f.clock.Advance(std::chrono::seconds(1));  // least recently used first
    Run(f, {p.begin(), p.end()});
  }
  EXPECT_GT(Run(f, Chat(f, kSystem, "hello")).usage.cached_tokens, 0);
  EXPECT_EQ(f.sched->Snapshot().pinned_restores, 1);
  EXPECT_EQ(f.engine->violations, 0);
}

TEST_F(PinnedPromptTest, ADamagedFileIsComputedAgainAndReplaced) {
  {
    Fixture first(PinOpts(2, {{kSystem, "", "", ""}}));
    first.sched->WarmPinned();
  }
  ASSERT_EQ(Files().size(), 1u);
  const auto file = Files()[0];
  std::ofstream(file, std::ios::binary | std::ios::trunc) << "not a sequence state";
  Fixture f(PinOpts(2, {{kSystem, "", "", ""}}));
  f.sched->WarmPinned();
  EXPECT_EQ(f.engine->loads, 1);
  EXPECT_EQ(f.engine->saves, 1);  // computed and written again
  EXPECT_GT(std::filesystem::file_size(file), 20u);
  EXPECT_EQ(Run(f, Chat(f, kSystem, "hi")).usage.cached_tokens,
            static_cast<int32_t>(PinnedTokens(f.sched->engine(), {kSystem, "", "", ""}).size()));
}

TEST_F(PinnedPromptTest, AFileGoneWhileServingMeansTheRequestIsComputed) {
  Fixture f(PinOpts(1, {{kSystem, "", "", ""}}));
  f.sched->WarmPinned();
  const std::string other = "Something else entirely, and long enough to matter.";
  Run(f, {other.begin(), other.end()});
  std::filesystem::remove_all(dir_);
  EXPECT_EQ(Run(f, Chat(f, kSystem, "hi")).usage.cached_tokens, 0);
  EXPECT_EQ(f.sched->Snapshot().pinned_restores, 0);
  // Not tried again: the next request uses the cache the last one left.
  const int loads = f.engine->loads;
  Run(f, {other.begin(), other.end()});
  Run(f, Chat(f, kSystem, "hello"));
  EXPECT_EQ(f.engine->loads, loads);
}

TEST_F(PinnedPromptTest, APrefixServesOnlyItsScope) {
  Fixture f(PinOpts(1, {{kSystem, "", "tenant:lab/internal", ""}}));
  f.sched->WarmPinned();
  EXPECT_EQ(Run(f, Chat(f, kSystem, "hi"), "tenant:office/internal").usage.cached_tokens, 0);
  EXPECT_EQ(f.sched->Snapshot().pinned_restores, 0);
  // The office request took the slot; the lab's prefix comes back from disk.
  EXPECT_GT(Run(f, Chat(f, kSystem, "hi"), "tenant:lab/internal").usage.cached_tokens, 0);
  EXPECT_EQ(f.sched->Snapshot().pinned_restores, 1);
}

TEST_F(PinnedPromptTest, MorePrefixesThanSessionsWaitOnDisk) {
  Fixture f(
      PinOpts(1, {{kSystem, "", "", ""}, {"", "Q: what is the torque for an M8 bolt?", "", ""}}));
  f.sched->WarmPinned();
  EXPECT_EQ(f.engine->saves, 2);
  EXPECT_EQ(f.sched->Snapshot().pinned_prompts, 2);
  const int loads = f.engine->loads;  // WarmPinned() looked for both files first
  // The first is in the slot; the second comes from its file.
  EXPECT_GT(Run(f, Chat(f, kSystem, "hi")).usage.cached_tokens, 0);
  EXPECT_EQ(f.engine->loads, loads);
  const std::string raw = "Q: what is the torque for an M8 bolt? A:";
  EXPECT_EQ(Run(f, {raw.begin(), raw.end()}).usage.cached_tokens, 37);
  EXPECT_EQ(f.engine->loads, loads + 1);
}

TEST_F(PinnedPromptTest, WhatCannotBePinnedIsSkipped) {
  // Longer than a session (ctx 128): skipped; two tokens: the shortest kept.
  Fixture f(PinOpts(2, {{"", std::string(200, 'x'), "", ""}, {"", "ab", "", ""}}));
  f.sched->WarmPinned();
  EXPECT_EQ(f.sched->Snapshot().pinned_prompts, 1);
  EXPECT_EQ(f.engine->saves, 1);
  // Without a directory: computed and held, nothing written.
  SchedulerOptions o = PinOpts(2, {{kSystem, "", "", ""}});
  o.pinned_dir.clear();
  std::filesystem::remove_all(dir_);
  Fixture g(o);
  g.sched->WarmPinned();
  EXPECT_EQ(g.engine->saves, 0);
  EXPECT_TRUE(Files().empty());
  EXPECT_GT(Run(g, Chat(g, kSystem, "hi")).usage.cached_tokens, 0);
  // With the prefix cache off nothing is pinned.
  SchedulerOptions off = PinOpts(2, {{kSystem, "", "", ""}});
  off.prefix_cache = false;
  Fixture h(off);
  h.sched->WarmPinned();
  EXPECT_EQ(h.sched->Snapshot().pinned_prompts, 0);
  EXPECT_TRUE(h.engine->batches.empty());
}

// A file of `bytes` bytes whose last use was `age` ago.
void WriteAged(const std::filesystem::path& path, size_t bytes, std::chrono::minutes age) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << std::string(bytes, 'k');
  std::filesystem::last_write_time(path, std::filesystem::file_time_type::clock::now() - age);
}

TEST_F(PinnedPromptTest, TheDirectoryBoundRemovesTheLeastRecentlyUsedFilesFirst) {
  using std::chrono::minutes;
  WriteAged(dir_ / "pinned-old.kvseq", 400 << 10, minutes(600));
  WriteAged(dir_ / "pinned-older-but-in-use.kvseq", 400 << 10, minutes(900));
  WriteAged(dir_ / "pinned-mid.kvseq", 400 << 10, minutes(300));
  WriteAged(dir_ / "pinned-new.kvseq", 400 << 10, minutes(1));
  WriteAged(dir_ / "pinned-crashed.kvseq.tmp", 100 << 10, minutes(30));
  WriteAged(dir_ / "pinned-saving.kvseq.tmp", 100 << 10, minutes(1));
  WriteAged(dir_ / "notes.txt", 900 << 10, minutes(9000));  // not ours: left alone
  // 1,600 KiB of prefixes against a 1,000 KiB bound: the two oldest not in use go.
  PinnedPruneResult r =
      PrunePinnedDir(dir_.string(), 1000 << 10, {"pinned-older-but-in-use.kvseq"});
  EXPECT_EQ(r.files_removed, 3);  // old, mid and the crashed save
  EXPECT_EQ(r.bytes_removed, 900u << 10);
  EXPECT_EQ(r.bytes_left, 800u << 10);
  std::vector<std::string> left;
  for (const auto& p : Files()) left.push_back(p.filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left,
            (std::vector<std::string>{"notes.txt", "pinned-new.kvseq",
                                      "pinned-older-but-in-use.kvseq", "pinned-saving.kvseq.tmp"}));
  // Files in use are kept even past the bound; the result says so.
  r = PrunePinnedDir(dir_.string(), 1, {"pinned-new.kvseq", "pinned-older-but-in-use.kvseq"});
  EXPECT_EQ(r.files_removed, 0);
  EXPECT_EQ(r.bytes_left, 800u << 10);
  // A directory that is not there is empty.
  EXPECT_EQ(PrunePinnedDir((dir_ / "none").string(), 0, {}).bytes_left, 0u);
}

TEST_F(PinnedPromptTest, EachStartTouchesItsFilesAndBoundsTheDirectory) {
  using std::chrono::minutes;
  {
    Fixture first(PinOpts(2, {{kSystem, "", "", ""}}));
    first.sched->WarmPinned();
  }
  ASSERT_EQ(Files().size(), 1u);
  const std::filesystem::path mine = Files()[0];
  const auto size = std::filesystem::file_size(mine);
  // Last used long ago, beside two files of another model, one older.
  std::filesystem::last_write_time(mine,
                                   std::filesystem::file_time_type::clock::now() - minutes(900));
  WriteAged(dir_ / "pinned-othermodel1.kvseq", size, minutes(600));
  WriteAged(dir_ / "pinned-othermodel2.kvseq", size, minutes(1200));
  SchedulerOptions o = PinOpts(2, {{kSystem, "", "", ""}});
  o.pinned_dir_max_bytes = 2 * size;  // room for two of the three
  Fixture f(o);
  f.sched->WarmPinned();
  EXPECT_EQ(f.engine->loads, 1);
  // Read, so touched: now the most recent. The oldest other file gave way.
  EXPECT_GT(std::filesystem::last_write_time(mine),
            std::filesystem::file_time_type::clock::now() - minutes(5));
  EXPECT_TRUE(std::filesystem::exists(dir_ / "pinned-othermodel1.kvseq"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "pinned-othermodel2.kvseq"));
  // A bound smaller than the files in use keeps them (and the request warm).
  o.pinned_dir_max_bytes = 1;
  Fixture g(o);
  g.sched->WarmPinned();
  EXPECT_TRUE(std::filesystem::exists(mine));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "pinned-othermodel1.kvseq"));
  EXPECT_GT(Run(g, Chat(g, kSystem, "hi")).usage.cached_tokens, 0);
}

}  // namespace
}  // namespace outpost::scheduler

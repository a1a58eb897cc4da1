// The prefix cache on the fake engine: a shared prefix computed once and
// reused in place or by copy, bursts, sliding windows, reclaiming idle caches,
// scopes, and a failed decode dropping the cache.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "scheduler/scheduler_fixture.h"

namespace outpost::scheduler {
namespace {

using outpost::testing::FakeEngine;
using testing::Fixture;
using testing::Opts;
using testing::RecordingSink;
using testing::SeqsInLastBatch;
using testing::SubmitPrompt;
using testing::Tokens;

SchedulerOptions CacheOpts(int32_t sessions) {
  SchedulerOptions o = Opts(sessions, 4, /*batch_size=*/64, /*prefill_chunk=*/64);
  o.prefix_cache = true;
  o.min_copied_prefix = 8;
  return o;
}

// Prompt positions (of sequence `seq`) computed in all batches from `from` on.
std::vector<int32_t> PrefilledPositions(const FakeEngine& e, size_t from, engine::SeqId seq) {
  std::vector<int32_t> out;
  for (size_t b = from; b < e.batches.size(); ++b) {
    for (const auto& x : e.batches[b]) {
      if (x.seq == seq) out.push_back(x.pos);
    }
  }
  return out;
}

const std::string kSystem = "You are the line-side assistant. Answer briefly. ";  // 49 tokens

TEST(PrefixCache, ASharedPrefixIsComputedOnceThenReusedInPlace) {
  Fixture f(CacheOpts(1));
  auto a = f.Sink("a");
  ASSERT_TRUE(SubmitPrompt(f, a, kSystem + "Q: torque?").ok());
  f.RunToIdle();
  ASSERT_TRUE(a->done);
  EXPECT_EQ(a->result.usage.cached_tokens, 0);
  // The finished sequence keeps its KV: prompt + the reply's decoded tokens.
  EXPECT_GT(f.engine->KvCells(0), static_cast<int32_t>(kSystem.size()));

  auto b = f.Sink("b");
  const size_t before = f.engine->batches.size();
  ASSERT_TRUE(SubmitPrompt(f, b, kSystem + "Q: speed?").ok());
  f.RunToIdle();
  ASSERT_TRUE(b->done);
  EXPECT_EQ(b->text, "hello");
  const auto shared = static_cast<int32_t>(kSystem.size() + 3);  // "Q: " too
  EXPECT_EQ(b->result.usage.cached_tokens, shared);
  EXPECT_EQ(b->result.usage.prompt_tokens, static_cast<int32_t>((kSystem + "Q: speed?").size()));
  // Only the rest of the prompt was computed, continuing at the cut.
  const auto pos = PrefilledPositions(*f.engine, before, 0);
  ASSERT_FALSE(pos.empty());
  EXPECT_EQ(pos.front(), shared);
  EXPECT_EQ(f.engine->violations, 0);
  const auto snap = f.sched->Snapshot();
  EXPECT_TRUE(snap.prefix_cache);
  EXPECT_EQ(snap.prompt_tokens_cached, shared);
  EXPECT_GT(snap.prefix_cache_tokens, 0);
}

TEST(PrefixCache, ConcurrentSessionsShareAPrefixByCopy) {
  // `a` is still answering when `b` arrives with the same system prompt: b's
  // slot gets a copy of a's KV, cut at the shared prefix.
  Fixture f(CacheOpts(2), std::string(20, 'r'));
  auto a = f.Sink("a");
  ASSERT_TRUE(SubmitPrompt(f, a, kSystem + "Q: torque?").ok());
  for (int i = 0; i < 3; ++i) f.sched->StepForTest();
  ASSERT_FALSE(a->done);
  auto b = f.Sink("b");
  const size_t before = f.engine->batches.size();
  ASSERT_TRUE(SubmitPrompt(f, b, kSystem + "Q: speed?").ok());
  f.RunToIdle();
  ASSERT_TRUE(a->done && b->done);
  EXPECT_EQ(f.engine->copies, 1);
  EXPECT_EQ(b->result.usage.cached_tokens, static_cast<int32_t>(kSystem.size() + 3));
  EXPECT_EQ(PrefilledPositions(*f.engine, before, 1).front(),
            static_cast<int32_t>(kSystem.size() + 3));
  EXPECT_EQ(b->text, std::string(20, 'r'));
  EXPECT_EQ(f.engine->violations, 0);
}

TEST(PrefixCache, TheSamePromptAgainRecomputesOnlyItsLastToken) {
  Fixture f(CacheOpts(1));
  for (const char* name : {"a", "b"}) {
    auto s = f.Sink(name);
    ASSERT_TRUE(SubmitPrompt(f, s, kSystem).ok());
    f.RunToIdle();
    ASSERT_TRUE(s->done);
    EXPECT_EQ(s->text, "hello");
    if (std::string(name) == "b") {
      EXPECT_EQ(s->result.usage.cached_tokens, static_cast<int32_t>(kSystem.size() - 1));
    }
  }
  EXPECT_EQ(f.engine->violations, 0);
}

TEST(PrefixCache, AnIdleHolderBeatsABusyOneThatSavesLittleMore) {
  // Slots 0 and 1 both hold the system prompt. b then runs in slot 0 with a
  // prompt sharing 4 more tokens with c than slot 1 does: cutting slot 1 in
  // place is free, copying slot 0 would move its whole KV to save 4 tokens.
  Fixture f(CacheOpts(3), std::string(20, 'r'));
  auto a1 = f.Sink("a1");
  auto a2 = f.Sink("a2");
  ASSERT_TRUE(SubmitPrompt(f, a1, kSystem + "Q1").ok());
  ASSERT_TRUE(SubmitPrompt(f, a2, kSystem + "Q2").ok());
  f.RunToIdle();  // a2 waited for a1's prefix and copied it: both hold it now
  const int copies = f.engine->copies;
  auto b = f.Sink("b");
  ASSERT_TRUE(SubmitPrompt(f, b, kSystem + "R: 11").ok());
  f.sched->StepForTest();
  ASSERT_FALSE(b->done);
  auto c = f.Sink("c");
  ASSERT_TRUE(SubmitPrompt(f, c, kSystem + "R: 12").ok());
  f.RunToIdle();
  EXPECT_EQ(f.engine->copies, copies);
  EXPECT_EQ(c->result.usage.cached_tokens, static_cast<int32_t>(kSystem.size()));
  EXPECT_EQ(f.engine->violations, 0);
}

TEST(PrefixCache, ABurstWithANewPrefixComputesItOnce) {
  // Three requests arrive together with a system prompt nobody holds yet: the
  // first computes it, the others wait for it to be decoded and copy it.
  Fixture f(CacheOpts(3));
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  for (const char* q : {"Q: torque?", "Q: speed?", "Q: labels?"}) {
    sinks.push_back(f.Sink(q));
    ASSERT_TRUE(SubmitPrompt(f, sinks.back(), kSystem + q).ok());
  }
  f.RunToIdle();
  const auto shared = static_cast<int32_t>(kSystem.size() + 3);
  int computed_once = 0;
  for (const auto& s : sinks) {
    ASSERT_TRUE(s->done) << s->name;
    EXPECT_EQ(s->text, "hello") << s->name;
    if (s->result.usage.cached_tokens == 0)
      ++computed_once;
    else
      EXPECT_EQ(s->result.usage.cached_tokens, shared) << s->name;
  }
  EXPECT_EQ(computed_once, 1);
  EXPECT_EQ(f.engine->copies, 2);
  // Position 0 was computed for one sequence only.
  int at_zero = 0;
  for (const auto& b : f.engine->batches)
    for (const auto& x : b) at_zero += x.pos == 0 ? 1 : 0;
  EXPECT_EQ(at_zero, 1);
  EXPECT_EQ(f.engine->violations, 0);
}

TEST(PrefixCache, AWaiterWhoseHolderIsCancelledComputesItsPrompt) {
  Fixture f(CacheOpts(2));
  auto a = f.Sink("a");
  auto b = f.Sink("b");
  ASSERT_TRUE(SubmitPrompt(f, a, kSystem + "Q: torque?").ok());
  ASSERT_TRUE(SubmitPrompt(f, b, kSystem + "Q: speed?").ok());
  a->cancel = true;  // a leaves before its prompt is decoded
  f.RunToIdle();
  EXPECT_EQ(a->result.finish, FinishReason::kCancelled);
  ASSERT_TRUE(b->done);
  EXPECT_EQ(b->text, "hello");
  EXPECT_EQ(b->result.usage.cached_tokens, 0);
  EXPECT_EQ(f.engine->violations, 0);
}

TEST(PrefixCache, ShortCopiesAreNotWorthIt) {
  // A busy holder shares only 4 tokens (< min_copied_prefix 8): recompute.
  Fixture f(CacheOpts(2), std::string(20, 'r'));
  auto a = f.Sink("a");
  ASSERT_TRUE(SubmitPrompt(f, a, "abcdefgh-one").ok());
  f.sched->StepForTest();
  auto b = f.Sink("b");
  ASSERT_TRUE(SubmitPrompt(f, b, "abcdXXXX-two").ok());
  f.RunToIdle();
  EXPECT_EQ(f.engine->copies, 0);
  EXPECT_EQ(b->result.usage.cached_tokens, 0);
  EXPECT_EQ(f.engine->violations, 0);
}

// Asks the torque question, then the speed one; the speed one's reused tokens.
int32_t SecondQuestionReuse(Fixture& f) {
  auto a = f.Sink("a");
  EXPECT_TRUE(SubmitPrompt(f, a, kSystem + "Q: torque?").ok());
  f.RunToIdle();
  auto b = f.Sink("b");
  EXPECT_TRUE(SubmitPrompt(f, b, kSystem + "Q: speed?").ok());
  f.RunToIdle();
  return b->result.usage.cached_tokens;
}

TEST(PrefixCache, SlidingWindowModelsReuseOnlyWhileTheWindowIsHeld) {
  // With sliding-window layers a holder drops the cells that left the window:
  // one that went on 11 tokens past the shared prefix, with a window of 4,
  // lacks the cells before the cut and is not used...
  Fixture f(CacheOpts(1));
  f.engine->sliding_window = 4;
  EXPECT_EQ(SecondQuestionReuse(f), 0);
  // ...but one whose tokens all prefix the new prompt is (a conversation
  // that goes on from where the last answer ended).
  const int32_t held = f.engine->KvCells(0);
  auto c = f.Sink("c");
  GenerationRequest req;
  req.prompt = Tokens(kSystem + "Q: speed?");
  // b's answer: every token but the end-of-generation one was decoded.
  for (char ch : std::string("hello")) req.prompt.push_back(ch);
  for (char ch : std::string(" and more?")) req.prompt.push_back(ch);
  ASSERT_TRUE(f.sched->Submit(std::move(req), c).ok());
  f.RunToIdle();
  EXPECT_EQ(c->result.usage.cached_tokens, held);
  EXPECT_EQ(f.engine->violations, 0);
}

TEST(PrefixCache, AWindowLongerThanTheHolderKeepsEverythingReusable) {
  // Gemma 3's window is 512 tokens: short conversations lose no cells.
  Fixture f(CacheOpts(1));
  f.engine->sliding_window = 512;
  EXPECT_EQ(SecondQuestionReuse(f), static_cast<int32_t>(kSystem.size() + 3));
  EXPECT_EQ(f.engine->violations, 0);
}

TEST(PrefixCache, IdleCachesAreReclaimedEmptiestAndOldestFirst) {
  // Three sessions: two hold caches; a new unrelated prompt takes the empty
  // slot, the next one the older cache; the newest cache survives longest.
  Fixture f(CacheOpts(3));
  auto a = f.Sink("a");
  ASSERT_TRUE(SubmitPrompt(f, a, "first prompt, cached").ok());
  f.RunToIdle();
  f.clock.Advance(std::chrono::seconds(1));
  auto b = f.Sink("b");
  ASSERT_TRUE(SubmitPrompt(f, b, "second prompt, cached").ok());
  f.RunToIdle();
  f.clock.Advance(std::chrono::seconds(1));
  ASSERT_GT(f.engine->KvCells(0), 0);
  ASSERT_GT(f.engine->KvCells(1), 0);
  ASSERT_EQ(f.engine->KvCells(2), 0);
  auto c = f.Sink("c");
  ASSERT_TRUE(SubmitPrompt(f, c, "zzz unrelated").ok());
  f.RunToIdle();
  EXPECT_GT(f.engine->KvCells(2), 0);  // took the empty slot
  EXPECT_GT(f.engine->KvCells(0), 0);  // caches untouched
  EXPECT_GT(f.engine->KvCells(1), 0);
  f.clock.Advance(std::chrono::seconds(1));
  auto d = f.Sink("d");
  ASSERT_TRUE(SubmitPrompt(f, d, "yyy unrelated too").ok());
  f.RunToIdle();
  // Slot 0 (the oldest cache) was reclaimed: the second prompt still hits.
  auto e = f.Sink("e");
  ASSERT_TRUE(SubmitPrompt(f, e, "second prompt, cached again").ok());
  f.RunToIdle();
  EXPECT_EQ(e->result.usage.cached_tokens,
            static_cast<int32_t>(std::string("second prompt, cached").size()));
  EXPECT_EQ(f.engine->violations, 0);
}

TEST(PrefixCache, RunningSequencesAreKeptConsecutive) {
  // Six sessions, every one holding a cache, the least recently used being
  // slot 0, then 5, then 1 … 4. Running sequences with gaps between their
  // ids cost the engine a pass over the weights per run (Engine::Decode),
  // so a newcomer takes the slot next to those running, not the oldest cache.
  Fixture f(CacheOpts(6), std::string(40, 'r'));
  const std::vector<std::string> held = {"A cached", "B cached", "C cached",
                                         "D cached", "E cached", "F cached"};
  for (const std::string& p : held) {
    auto s = f.Sink(p);
    ASSERT_TRUE(SubmitPrompt(f, s, p).ok());
    f.RunToIdle();
    f.clock.Advance(std::chrono::seconds(1));
  }
  for (size_t i = 0; i < held.size(); ++i) ASSERT_GT(f.engine->KvCells(i), 0) << i;
  for (size_t i : {1, 2, 3, 4}) {  // touch 1 … 4: slot 5 is now older than them
    auto s = f.Sink("touch");
    ASSERT_TRUE(SubmitPrompt(f, s, held[i], 1).ok());
    f.RunToIdle();
    ASSERT_GT(s->result.usage.cached_tokens, 0);
    f.clock.Advance(std::chrono::seconds(1));
  }
  auto x = f.Sink("x");
  ASSERT_TRUE(SubmitPrompt(f, x, "unrelated one").ok());
  f.sched->StepForTest();
  EXPECT_EQ(SeqsInLastBatch(*f.engine), std::vector<engine::SeqId>({0}));  // the oldest cache
  // Least recently used would be slot 5; slot 1 keeps the two together.
  auto y = f.Sink("y");
  ASSERT_TRUE(SubmitPrompt(f, y, "unrelated two").ok());
  f.sched->StepForTest();
  EXPECT_EQ(SeqsInLastBatch(*f.engine), std::vector<engine::SeqId>({0, 1}));
  // Slot 4 holds "E cached": a prompt sharing only "E " with it is not run
  // there (a third run) but in slot 2, from scratch.
  auto z = f.Sink("z");
  ASSERT_TRUE(SubmitPrompt(f, z, "E other").ok());
  f.sched->StepForTest();
  EXPECT_EQ(SeqsInLastBatch(*f.engine), std::vector<engine::SeqId>({0, 1, 2}));
  f.RunToIdle();
  EXPECT_EQ(z->result.usage.cached_tokens, 0);
  EXPECT_EQ(f.engine->violations, 0);
}

TEST(PrefixCache, ALongPrefixHeldAwayFromTheRunningOnesIsCopiedNextToThem) {
  Fixture f(CacheOpts(4), std::string(40, 'r'));
  // Slot 0 holds the system prompt; slots 1 and 2 other caches.
  for (const std::string& p :
       {kSystem + "Q: torque?", std::string("B cached"), std::string("C cached")}) {
    auto s = f.Sink(p);
    ASSERT_TRUE(SubmitPrompt(f, s, p).ok());
    f.RunToIdle();
    f.clock.Advance(std::chrono::seconds(1));
  }
  // x runs in slot 3 (empty): the system prompt's holder, slot 0, is not
  // next to it, so y's prefix is copied into slot 2 and slot 0 keeps its cache.
  auto x = f.Sink("x");
  ASSERT_TRUE(SubmitPrompt(f, x, "unrelated").ok());
  f.sched->StepForTest();
  ASSERT_EQ(SeqsInLastBatch(*f.engine), std::vector<engine::SeqId>({3}));
  const int copies = f.engine->copies;
  auto y = f.Sink("y");
  ASSERT_TRUE(SubmitPrompt(f, y, kSystem + "Q: speed?").ok());
  f.sched->StepForTest();
  EXPECT_EQ(SeqsInLastBatch(*f.engine), std::vector<engine::SeqId>({2, 3}));
  f.RunToIdle();
  EXPECT_EQ(f.engine->copies, copies + 1);
  EXPECT_EQ(y->result.usage.cached_tokens, static_cast<int32_t>(kSystem.size() + 3));
  EXPECT_EQ(y->text, std::string(40, 'r'));
  EXPECT_GT(f.engine->KvCells(0), static_cast<int32_t>(kSystem.size()));
  EXPECT_EQ(f.engine->violations, 0);
}

TEST(PrefixCache, AHolderNextToTheRunningOnesBeatsASlightlyLongerOneAwayFromThem) {
  // Slots 0 and 1 both hold the system prompt; slot 0 matches the new prompt
  // 6 tokens further (less than min_copied_prefix). With x running in slot
  // 2, slot 1 runs it in place: no copy, and one run.
  Fixture f(CacheOpts(4), std::string(40, 'r'));
  auto a = f.Sink("a");
  ASSERT_TRUE(SubmitPrompt(f, a, kSystem + "R: 12 rpm").ok());
  f.sched->StepForTest();
  auto b = f.Sink("b");  // copies a's prefix into slot 1 while a runs
  ASSERT_TRUE(SubmitPrompt(f, b, kSystem + "Q: torque?").ok());
  f.RunToIdle();
  auto c = f.Sink("c");
  ASSERT_TRUE(SubmitPrompt(f, c, "C cached").ok());
  f.RunToIdle();
  auto x = f.Sink("x");
  ASSERT_TRUE(SubmitPrompt(f, x, "C cached, again").ok());
  f.sched->StepForTest();
  ASSERT_EQ(SeqsInLastBatch(*f.engine), std::vector<engine::SeqId>({2}));
  const int copies = f.engine->copies;
  auto y = f.Sink("y");
  ASSERT_TRUE(SubmitPrompt(f, y, kSystem + "R: 12 bar").ok());
  f.sched->StepForTest();
  EXPECT_EQ(SeqsInLastBatch(*f.engine), std::vector<engine::SeqId>({1, 2}));
  f.RunToIdle();
  EXPECT_EQ(f.engine->copies, copies);
  EXPECT_EQ(y->result.usage.cached_tokens, static_cast<int32_t>(kSystem.size()));
  EXPECT_EQ(f.engine->violations, 0);
}

TEST(PrefixCache, ScopesDoNotShare) {
  // A restricted request never reuses KV another scope computed, nor leaves
  // KV that another scope reuses; within its scope it shares as usual.
  Fixture f(CacheOpts(2));
  auto run = [&](const char* name, const std::string& scope) {
    auto s = f.Sink(name);
    GenerationRequest req;
    req.prompt = Tokens(kSystem + name);
    req.cache_scope = scope;
    EXPECT_TRUE(f.sched->Submit(std::move(req), s).ok());
    f.RunToIdle();
    EXPECT_EQ(s->text, "hello");
    return s->result.usage.cached_tokens;
  };
  EXPECT_EQ(run("a", "tenant:plant/internal"), 0);
  EXPECT_EQ(run("b", "tenant:plant/restricted"), 0);
  EXPECT_EQ(run("c", "tenant:office/internal"), 0);
  EXPECT_EQ(run("d", "tenant:plant/restricted"), static_cast<int32_t>(kSystem.size()));
  EXPECT_EQ(f.engine->violations, 0);
}

TEST(PrefixCache, OffMeansEveryPromptIsComputedAndKvFreed) {
  SchedulerOptions o = CacheOpts(1);
  o.prefix_cache = false;
  Fixture f(o);
  for (const char* name : {"a", "b"}) {
    auto s = f.Sink(name);
    ASSERT_TRUE(SubmitPrompt(f, s, kSystem + "Q?").ok());
    f.RunToIdle();
    EXPECT_EQ(s->result.usage.cached_tokens, 0);
    EXPECT_EQ(f.engine->TotalKvCells(), 0);
  }
}

TEST(PrefixCache, AFailedDecodeDropsTheCache) {
  Fixture f(CacheOpts(1));
  auto a = f.Sink("a");
  ASSERT_TRUE(SubmitPrompt(f, a, kSystem).ok());
  f.RunToIdle();
  ASSERT_GT(f.engine->KvCells(0), 0);
  auto b = f.Sink("b");
  ASSERT_TRUE(SubmitPrompt(f, b, kSystem + "more").ok());
  f.engine->fail_next_decode = true;
  f.RunToIdle();
  EXPECT_EQ(b->result.finish, FinishReason::kError);
  EXPECT_EQ(f.engine->KvCells(0), 0);
  auto c = f.Sink("c");
  ASSERT_TRUE(SubmitPrompt(f, c, kSystem + "more").ok());
  f.RunToIdle();
  EXPECT_EQ(c->result.usage.cached_tokens, 0);
  EXPECT_EQ(c->text, "hello");
  EXPECT_EQ(f.engine->violations, 0);
}

}  // namespace
}  // namespace outpost::scheduler

// Running requests kept on consecutive slots (slot_moves.cc) on the fake
// engine: a hole a finished request leaves between running ones is closed by
// moving one of them — its KV and its sampler's state with it — the hole's
// cache is kept elsewhere, requests about to end stay put, the choices of
// one request move like any other, and a failed copy moves nothing.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "scheduler/scheduler_fixture.h"

namespace outpost::scheduler {
namespace {

using testing::Fixture;
using testing::Opts;
using testing::SeqsInLastBatch;
using testing::SubmitPrompt;

const std::string kReply(40, 'r');

SchedulerOptions MoveOpts(int32_t sessions) {
  SchedulerOptions o = Opts(sessions, 4, /*batch_size=*/64, /*prefill_chunk=*/64);
  o.prefix_cache = true;
  o.min_copied_prefix = 8;
  return o;
}

// Steps until `sink` is done (bounded).
void StepUntilDone(Fixture& f, const std::shared_ptr<testing::RecordingSink>& sink) {
  for (int i = 0; i < 1000 && !sink->done; ++i) f.sched->StepForTest();
  ASSERT_TRUE(sink->done);
}

struct Three {
  std::shared_ptr<testing::RecordingSink> a, b, c;
};

// a, b (2 tokens) and c on slots 0, 1 and 2, stepped until b has ended: a
// hole between a and c (max_tokens -1: until the reply ends).
Three OpenHole(Fixture& f, int32_t a_max = -1, int32_t c_max = -1) {
  Three t{f.Sink("a"), f.Sink("b"), f.Sink("c")};
  EXPECT_TRUE(SubmitPrompt(f, t.a, "alpha", a_max).ok());
  EXPECT_TRUE(SubmitPrompt(f, t.b, "bravo", 2).ok());
  EXPECT_TRUE(SubmitPrompt(f, t.c, "charlie", c_max).ok());
  f.sched->StepForTest();
  EXPECT_EQ(SeqsInLastBatch(*f.engine), std::vector<engine::SeqId>({0, 1, 2}));
  StepUntilDone(f, t.b);
  return t;
}

// a (12 tokens: it ends within kMinMoveTokens) and b (2) on slots 0 and 1,
// a request `g` with two choices on 2 and 3, stepped until b has ended and
// g's second choice has its prompt's copy: a hole between a and g.
void OpenHoleBeforeChoices(Fixture& f, const std::shared_ptr<testing::RecordingSink>& a,
                           const std::shared_ptr<testing::RecordingSink>& g, Priority priority) {
  auto b = f.Sink("b");
  ASSERT_TRUE(SubmitPrompt(f, a, "alpha", 12).ok());
  ASSERT_TRUE(SubmitPrompt(f, b, "bravo", 2).ok());
  GenerationRequest req;
  req.prompt = testing::Tokens("golf");
  req.n = 2;
  req.priority = priority;
  ASSERT_TRUE(f.sched->Submit(std::move(req), g).ok());
  if (priority != Priority::kBatch) {  // the batch class prefills after the others
    f.sched->StepForTest();
    ASSERT_EQ(SeqsInLastBatch(*f.engine), std::vector<engine::SeqId>({0, 1, 2}));  // 3 forks
  }
  StepUntilDone(f, b);
}

TEST(SlotMoves, AHoleBetweenRunningRequestsIsClosedAndItsCacheKept) {
  Fixture f(MoveOpts(4), kReply);
  auto [a, b, c] = OpenHole(f);
  // Slot 1 is a hole between a and c: two passes per step until an arrival
  // fills it. c moves there (one copy of its KV), and b's cache to slot 3.
  f.sched->StepForTest();
  EXPECT_EQ(SeqsInLastBatch(*f.engine), std::vector<engine::SeqId>({0, 1}));
  EXPECT_EQ(f.engine->moves, 1);
  f.RunToIdle();
  // The moved request carried on where it was: its text is whole (the fake's
  // sampler state moved with it) and its positions continued (violations).
  EXPECT_EQ(a->text, kReply);
  EXPECT_EQ(c->text, kReply);
  EXPECT_EQ(c->result.usage.completion_tokens, 40);
  EXPECT_EQ(f.engine->violations, 0);
  // b's conversation is still cached, in slot 3, for its next turn.
  auto b2 = f.Sink("b2");
  ASSERT_TRUE(SubmitPrompt(f, b2, "bravo again").ok());
  f.sched->StepForTest();
  EXPECT_EQ(SeqsInLastBatch(*f.engine), std::vector<engine::SeqId>({3}));
  f.RunToIdle();
  EXPECT_EQ(b2->result.usage.cached_tokens, 5);
  EXPECT_EQ(b2->text, kReply);
  // c's cells stayed in slot 2 as a cache too: the same prompt reuses them.
  auto c2 = f.Sink("c2");
  ASSERT_TRUE(SubmitPrompt(f, c2, "charlie").ok());
  f.RunToIdle();
  EXPECT_EQ(c2->result.usage.cached_tokens, 6);
  EXPECT_EQ(f.engine->violations, 0);
}

TEST(SlotMoves, OnlyRequestsWithTokensLeftMove) {
  // a and c both end within kMinMoveTokens: the hole stays.
  {
    Fixture f(MoveOpts(4), kReply);
    auto [a, b, c] = OpenHole(f, 10, 10);
    f.sched->StepForTest();
    EXPECT_EQ(SeqsInLastBatch(*f.engine), std::vector<engine::SeqId>({0, 2}));
    f.RunToIdle();
    EXPECT_EQ(f.engine->moves, 0);
    EXPECT_EQ(c->text, std::string(10, 'r'));
  }
  // c ends soon but a does not: a moves next to c instead.
  {
    Fixture f(MoveOpts(4), kReply);
    auto [a, b, c] = OpenHole(f, -1, 10);
    f.sched->StepForTest();
    EXPECT_EQ(SeqsInLastBatch(*f.engine), std::vector<engine::SeqId>({1, 2}));
    f.RunToIdle();
    EXPECT_EQ(f.engine->moves, 1);
    EXPECT_EQ(a->text, kReply);
    EXPECT_EQ(c->text, std::string(10, 'r'));
    EXPECT_EQ(f.engine->violations, 0);
  }
}

TEST(SlotMoves, TheChoicesOfOneRequestMoveLikeAnyOther) {
  // a ends within kMinMoveTokens, so the hole is closed by g's second choice.
  Fixture f(MoveOpts(5), kReply);
  auto a = f.Sink("a"), g = f.Sink("g");
  OpenHoleBeforeChoices(f, a, g, Priority::kInteractive);
  // The copy that gave the second choice its prompt is made at the next
  // decode: it moves one step later.
  f.sched->StepForTest();
  f.sched->StepForTest();
  EXPECT_EQ(SeqsInLastBatch(*f.engine), std::vector<engine::SeqId>({0, 1, 2}));
  EXPECT_EQ(f.engine->moves, 1);
  f.RunToIdle();
  ASSERT_EQ(g->choices.size(), 2u);
  EXPECT_EQ(g->choices[0], kReply);
  EXPECT_EQ(g->choices[1], kReply);
  EXPECT_EQ(g->result.usage.completion_tokens, 80);
  EXPECT_EQ(a->text, std::string(12, 'r'));
  EXPECT_EQ(f.engine->violations, 0);
}

TEST(SlotMoves, AMovedChoiceIsStillFoundThroughItsRequest) {
  // A batch-class request with two choices, one of them moved; an
  // interactive request needing its sessions preempts both choices at once.
  Fixture f(MoveOpts(5), kReply);
  auto a = f.Sink("a"), g = f.Sink("g"), x = f.Sink("x");
  OpenHoleBeforeChoices(f, a, g, Priority::kBatch);
  f.sched->StepForTest();
  f.sched->StepForTest();
  ASSERT_EQ(SeqsInLastBatch(*f.engine), std::vector<engine::SeqId>({0, 1, 2}));
  ASSERT_EQ(f.engine->moves, 1);
  ASSERT_FALSE(g->done);
  GenerationRequest big;
  big.prompt = testing::Tokens("xray");
  big.n = 3;  // two sessions are idle
  ASSERT_TRUE(f.sched->Submit(std::move(big), x).ok());
  f.sched->StepForTest();
  EXPECT_TRUE(g->done);
  EXPECT_EQ(g->result.error.code(), StatusCode::kResourceExhausted);
  f.RunToIdle();
  EXPECT_EQ(x->choices.size(), 3u);
  EXPECT_EQ(x->text, kReply);
  EXPECT_EQ(a->text, std::string(12, 'r'));
  EXPECT_EQ(f.engine->violations, 0);
}

TEST(SlotMoves, ARequestTheEngineCannotMoveRunsOnWhereItWas) {
  SchedulerOptions o = MoveOpts(4);
  o.prefix_cache = false;  // the hole caches nothing: the move is the only copy
  Fixture f(o, kReply);
  auto [a, b, c] = OpenHole(f);
  f.engine->fail_next_cell_copy = true;
  f.sched->StepForTest();
  EXPECT_EQ(SeqsInLastBatch(*f.engine), std::vector<engine::SeqId>({0, 2}));
  EXPECT_EQ(f.engine->moves, 0);
  EXPECT_EQ(f.engine->KvCells(1), 0);
  f.sched->StepForTest();  // the next step tries again
  EXPECT_EQ(SeqsInLastBatch(*f.engine), std::vector<engine::SeqId>({0, 1}));
  EXPECT_EQ(f.engine->moves, 1);
  f.RunToIdle();
  EXPECT_EQ(a->text, kReply);
  EXPECT_EQ(c->text, kReply);
  EXPECT_EQ(f.engine->violations, 0);
}

TEST(SlotMoves, OffLeavesTheHole) {
  SchedulerOptions o = MoveOpts(4);
  o.move_running = false;
  Fixture f(o, kReply);
  auto [a, b, c] = OpenHole(f);
  f.sched->StepForTest();
  EXPECT_EQ(SeqsInLastBatch(*f.engine), std::vector<engine::SeqId>({0, 2}));
  f.RunToIdle();
  EXPECT_EQ(f.engine->moves, 0);
  EXPECT_EQ(c->text, kReply);
}

}  // namespace
}  // namespace outpost::scheduler

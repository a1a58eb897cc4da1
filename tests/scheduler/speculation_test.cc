// N-gram speculation on the fake engine: the same answers in fewer steps
// where the text repeats, guesses bounded by max_tokens and the session, and
// none where it would not pay (batch class, a busy batch, a prompt being
// prefilled).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "scheduler/scheduler_fixture.h"

namespace outpost::scheduler {
namespace {

using testing::Fixture;
using testing::Opts;

// A reply that repeats: every guess after the first period is right.
const std::string kEcho = "copy this line; copy this line; copy this line; copy this line; ";

SchedulerOptions Spec(int32_t draft, int32_t sessions = 2) {
  SchedulerOptions o = Opts(sessions, 4, /*batch_size=*/64, /*prefill_chunk=*/16);
  o.ctx_per_session = 256;
  o.spec_draft_max = draft;
  return o;
}

struct Outcome {
  std::string text;
  size_t steps = 0;
  uint64_t drafted = 0, accepted = 0;
  int violations = 0;
  int32_t kv_after = 0;
};

// What a step of n rows costs on the simulated clock (µs). By default a row
// is nearly free beside the step (a GPU, a bandwidth-bound CPU), so guesses
// pay and speculation's plan (draft_plan.h) keeps them.
using StepCost = std::function<int64_t(size_t)>;
int64_t CheapRows(size_t n) {
  return 10000 + 100 * static_cast<int64_t>(n);
}

Outcome Generate(SchedulerOptions o, const std::string& reply, int32_t max_tokens = -1,
                 Priority p = Priority::kInteractive, const StepCost& step_us = CheapRows) {
  o.prefix_cache = true;  // a finished request keeps its KV: its cells must be exact
  Fixture f(o, reply);
  f.engine->on_decode = [&](size_t n) { f.clock.Advance(std::chrono::microseconds(step_us(n))); };
  const auto stats = SchedulerStats::Register(f.registry, {"model"}, {"fake"});
  auto sink = f.Sink("one");
  EXPECT_TRUE(f.Submit(sink, 8, max_tokens, p).ok());
  f.RunToIdle();
  EXPECT_TRUE(sink->done);
  Outcome r;
  r.text = sink->text;
  r.steps = f.engine->batches.size();
  r.drafted = stats.spec_drafted.value();
  r.accepted = stats.spec_accepted.value();
  r.violations = f.engine->violations;
  r.kv_after = f.engine->TotalKvCells();
  return r;
}

TEST(Speculation, RepeatingTextComesOutTheSameInFewerSteps) {
  const Outcome plain = Generate(Spec(0), kEcho);
  const Outcome spec = Generate(Spec(4), kEcho);
  EXPECT_EQ(spec.text, plain.text);
  EXPECT_EQ(spec.text, kEcho);
  EXPECT_LT(spec.steps * 2, plain.steps) << spec.steps << " vs " << plain.steps;
  EXPECT_GT(spec.accepted, 0u);
  EXPECT_LE(spec.accepted, spec.drafted);
  EXPECT_EQ(plain.drafted, 0u);
  // Refused guesses leave no cells behind: the cache holds what plain decoding holds.
  EXPECT_EQ(spec.kv_after, plain.kv_after);
  EXPECT_EQ(spec.violations, 0);
}

TEST(Speculation, GuessesNeverRunPastMaxTokens) {
  for (int32_t max_tokens : {1, 2, 5, 23}) {
    const Outcome spec = Generate(Spec(4), kEcho, max_tokens);
    EXPECT_EQ(spec.text, kEcho.substr(0, static_cast<size_t>(max_tokens))) << max_tokens;
    EXPECT_EQ(spec.violations, 0) << max_tokens;
  }
}

TEST(Speculation, TextThatDoesNotRepeatComesOutTheSameAndNoSlower) {
  std::string varied;
  for (int i = 0; i < 60; ++i) varied += static_cast<char>('!' + (i * 37) % 90);
  const Outcome plain = Generate(Spec(0), varied);
  const Outcome spec = Generate(Spec(4), varied);
  EXPECT_EQ(spec.text, plain.text);
  EXPECT_LE(spec.steps, plain.steps);
  EXPECT_EQ(spec.kv_after, plain.kv_after);
  EXPECT_EQ(spec.violations, 0);
}

TEST(Speculation, GuessesAreKeptOnlyWhereTheirRowsAreWorthIt) {
  // Text whose guesses come true about half the time: words drawn at random
  // from a few, so a word's end can be guessed and the word after it not.
  const char* words[] = {"lathe ", "valve ", "pump ", "conveyor ", "filler "};
  std::string mixed;
  uint32_t x = 12345;
  while (mixed.size() < 200) {
    x = x * 1103515245u + 12345u;
    mixed += words[(x >> 16) % 5];
  }
  // A row costs a hundredth of a step's fixed part, or as much as a token
  // (a compute-bound CPU).
  const auto dear = [](size_t n) { return 500 + 10000 * static_cast<int64_t>(n); };
  SchedulerOptions o = Spec(4);
  o.ctx_per_session = 512;
  const Outcome plain = Generate(Spec(0), mixed);
  const Outcome c = Generate(o, mixed);
  const Outcome d = Generate(o, mixed, -1, Priority::kInteractive, dear);
  EXPECT_EQ(c.text, plain.text);
  EXPECT_EQ(d.text, plain.text);
  EXPECT_EQ(d.kv_after, plain.kv_after);
  const double acceptance = static_cast<double>(c.accepted) / static_cast<double>(c.drafted);
  EXPECT_GT(acceptance, 0.2);
  EXPECT_LT(acceptance, 0.8);
  // Cheap rows: guessing goes on through the answer and saves steps. Dear
  // rows: the plan learns what a bigger step costs from the first few it
  // tries, and then keeps only guesses nearly sure to come true.
  EXPECT_LT(c.steps, plain.steps);
  EXPECT_GT(c.drafted, 4 * d.drafted) << c.drafted << " vs " << d.drafted;
  EXPECT_EQ(c.violations, 0);
  EXPECT_EQ(d.violations, 0);
}

TEST(Speculation, ASequenceThatStoppedGuessingStartsAgainWhenItsTextRepeats) {
  // First a stretch where every guess is wrong ("xa" is followed by a new
  // letter each time, and the n-gram index guesses the last one), then an
  // echo. Rows cost a fifth of a step here: guesses pay only when they
  // mostly come true. The drafts left out are still scored against what is
  // sampled, so the sequence's record turns once the echo starts.
  std::string reply;
  for (char c = 'b'; c <= 'w'; ++c) reply += std::string("xa") + c;
  for (int i = 0; i < 4; ++i) reply += kEcho;
  const auto moderate = [](size_t n) { return 8000 + 2000 * static_cast<int64_t>(n); };
  SchedulerOptions o = Spec(4);
  o.ctx_per_session = 512;
  SchedulerOptions off = o;
  off.spec_draft_max = 0;
  const Outcome plain = Generate(off, reply, -1, Priority::kInteractive, moderate);
  const Outcome spec = Generate(o, reply, -1, Priority::kInteractive, moderate);
  EXPECT_EQ(spec.text, plain.text);
  EXPECT_EQ(spec.violations, 0);
  EXPECT_LT(spec.steps * 3, plain.steps * 2) << spec.steps << " vs " << plain.steps;
}

TEST(Speculation, TheBatchClassNeverGuesses) {
  const Outcome spec = Generate(Spec(4), kEcho, -1, Priority::kBatch);
  EXPECT_EQ(spec.text, kEcho);
  EXPECT_EQ(spec.drafted, 0u);
}

TEST(Speculation, NoGuessesWhileMoreSequencesDecodeThanTheLimit) {
  SchedulerOptions o = Spec(4, /*sessions=*/3);
  o.spec_max_batch = 2;
  Fixture f(o, kEcho);
  const auto stats = SchedulerStats::Register(f.registry, {"model"}, {"fake"});
  std::vector<std::shared_ptr<testing::RecordingSink>> sinks;
  for (int i = 0; i < 3; ++i) {
    sinks.push_back(f.Sink("s" + std::to_string(i)));
    ASSERT_TRUE(f.Submit(sinks.back(), 8).ok());
  }
  // Three decode together (more than 2): no step carries a guess.
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(f.sched->StepForTest());
  EXPECT_EQ(stats.spec_drafted.value(), 0u);
  f.RunToIdle();
  for (const auto& s : sinks) EXPECT_EQ(s->text, kEcho);
  EXPECT_EQ(f.engine->violations, 0);
}

}  // namespace
}  // namespace outpost::scheduler

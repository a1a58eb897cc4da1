// The scheduler on a fake engine and a simulated clock: admission, priority
// order, queue-wait expiry with Retry-After, chunked prefill bounds,
// cancellation freeing KV, and the results pushed to the sink. The prefix
// cache has its own file (prefix_cache_test.cc).
#include "outpost/scheduler/scheduler.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "mocks/fake_engine.h"
#include "mocks/sim_clock.h"
#include "outpost/telemetry/genai_stats.h"
#include "outpost/telemetry/prometheus_text.h"
#include "scheduler/scheduler_fixture.h"

namespace outpost::scheduler {
namespace {

using outpost::testing::FakeEngine;
using outpost::testing::SimClock;
using testing::Fixture;
using testing::Opts;
using testing::RecordingSink;

TEST(Scheduler, AnswersWithTheModelsTextAndUsage) {
  Fixture f(Opts(1, 0));
  auto a = f.Sink("a");
  ASSERT_TRUE(f.Submit(a, 6).ok());
  f.RunToIdle();
  ASSERT_TRUE(a->done);
  EXPECT_EQ(a->text, "hello");
  EXPECT_EQ(a->result.finish, FinishReason::kStop);
  EXPECT_EQ(a->result.usage.prompt_tokens, 6);
  EXPECT_EQ(a->result.usage.completion_tokens, 5);
  EXPECT_EQ(f.engine->TotalKvCells(), 0);  // finished: KV freed
  EXPECT_EQ(f.engine->violations, 0);
}

TEST(Scheduler, MaxTokensEndsWithLength) {
  Fixture f(Opts(1, 0));
  auto a = f.Sink("a");
  ASSERT_TRUE(f.Submit(a, 4, /*max_tokens=*/3).ok());
  f.RunToIdle();
  EXPECT_EQ(a->text, "hel");
  EXPECT_EQ(a->result.finish, FinishReason::kLength);
  EXPECT_EQ(a->result.usage.completion_tokens, 3);
}

TEST(Scheduler, AdmitsSessionsThenQueueThenRefusesWithRetryAfter) {
  Fixture f(Opts(/*sessions=*/2, /*max_queue=*/1));
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  for (int i = 0; i < 3; ++i) {
    sinks.push_back(f.Sink("r" + std::to_string(i)));
    ASSERT_TRUE(f.Submit(sinks.back()).ok()) << i;
  }
  auto refused = f.Sink("refused");
  const Status st = f.Submit(refused);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_GE(st.retry_after_s(), 1);
  EXPECT_NE(st.message().find("all 2 sessions are busy"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("1 of 1 requests"), std::string::npos) << st.message();
  EXPECT_FALSE(refused->done);  // a refused request's sink is never called
  EXPECT_TRUE(f.sched->Snapshot().full);
  f.RunToIdle();
  for (const auto& s : sinks) EXPECT_EQ(s->text, "hello") << s->name;
  EXPECT_FALSE(f.sched->Snapshot().would_wait);
}

TEST(Scheduler, InteractiveIsAdmittedBeforeBatch) {
  Fixture f(Opts(1, 4));
  auto running = f.Sink("running");
  ASSERT_TRUE(f.Submit(running).ok());
  ASSERT_TRUE(f.sched->StepForTest());  // `running` holds the only session
  auto b1 = f.Sink("batch1"), b2 = f.Sink("batch2"), i1 = f.Sink("interactive");
  ASSERT_TRUE(f.Submit(b1, 4, -1, Priority::kBatch).ok());
  ASSERT_TRUE(f.Submit(b2, 4, -1, Priority::kBatch).ok());
  ASSERT_TRUE(f.Submit(i1, 4, -1, Priority::kInteractive).ok());
  f.RunToIdle();
  EXPECT_EQ(RecordingSink::order,
            (std::vector<std::string>{"running", "interactive", "batch1", "batch2"}));
}

TEST(Scheduler, ServiceTiersAreAdmittedInOrderAndFifoWithinATier) {
  Fixture f(Opts(1, 8));
  auto running = f.Sink("running");
  ASSERT_TRUE(f.Submit(running).ok());
  ASSERT_TRUE(f.sched->StepForTest());
  const std::vector<std::pair<std::string, Priority>> arrivals = {
      {"batch", Priority::kBatch},          {"flex", Priority::kFlex},
      {"default1", Priority::kInteractive}, {"priority1", Priority::kPriority},
      {"default2", Priority::kInteractive}, {"priority2", Priority::kPriority}};
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  for (const auto& [name, p] : arrivals) {
    sinks.push_back(f.Sink(name));
    ASSERT_TRUE(f.Submit(sinks.back(), 4, -1, p).ok()) << name;
  }
  f.RunToIdle();
  EXPECT_EQ(RecordingSink::order,
            (std::vector<std::string>{"running", "priority1", "priority2", "default1", "default2",
                                      "flex", "batch"}));
}

TEST(Scheduler, ALowerTierThatWaitedLongerThanItsAgingGoesFirst) {
  for (const int64_t aging : {int64_t{1000}, int64_t{0}}) {
    SchedulerOptions o = Opts(1, 8);
    o.max_queue_wait_ms = 60000;
    o.priority_aging_ms = aging;
    Fixture f(o, std::string(30, 'z'));
    auto running = f.Sink("running");
    ASSERT_TRUE(f.Submit(running).ok());
    ASSERT_TRUE(f.sched->StepForTest());
    auto flex = f.Sink("flex"), dflt = f.Sink("default"), prio = f.Sink("priority");
    ASSERT_TRUE(f.Submit(flex, 4, -1, Priority::kFlex).ok());  // counts as t=2000 ms
    f.clock.Advance(std::chrono::milliseconds(2500));
    ASSERT_TRUE(f.Submit(dflt, 4, -1, Priority::kInteractive).ok());  // t=3500 ms
    ASSERT_TRUE(f.Submit(prio, 4, -1, Priority::kPriority).ok());     // t=2500 ms
    f.RunToIdle();
    const std::vector<std::string> aged = {"running", "flex", "priority", "default"};
    const std::vector<std::string> strict = {"running", "priority", "default", "flex"};
    EXPECT_EQ(RecordingSink::order, aging > 0 ? aged : strict) << "aging " << aging;
  }
}

TEST(Scheduler, AFullQueueDisplacesTheNewestOfTheLowestClassForAHigherOne) {
  Fixture f(Opts(/*sessions=*/1, /*max_queue=*/2), std::string(20, 'z'));
  const auto stats = SchedulerStats::Register(f.registry, {"model"}, {"fake"});
  auto running = f.Sink("running");
  ASSERT_TRUE(f.Submit(running).ok());
  ASSERT_TRUE(f.sched->StepForTest());
  auto flex = f.Sink("flex"), batch = f.Sink("batch");
  ASSERT_TRUE(f.Submit(flex, 4, -1, Priority::kFlex).ok());
  ASSERT_TRUE(f.Submit(batch, 4, -1, Priority::kBatch).ok());
  // The queue is full: a request of the same class as the lowest queued one is refused.
  auto batch2 = f.Sink("batch2");
  EXPECT_EQ(f.Submit(batch2, 4, -1, Priority::kBatch).code(), StatusCode::kResourceExhausted);
  EXPECT_FALSE(batch2->done);
  // A default request takes the batch request's place, the next one the flex's.
  auto d1 = f.Sink("default1"), d2 = f.Sink("default2"), d3 = f.Sink("default3");
  ASSERT_TRUE(f.Submit(d1, 4, -1, Priority::kInteractive).ok());
  ASSERT_TRUE(batch->done);
  EXPECT_EQ(batch->result.finish, FinishReason::kError);
  EXPECT_EQ(batch->result.error.code(), StatusCode::kResourceExhausted);
  EXPECT_GE(batch->result.error.retry_after_s(), 1);
  EXPECT_NE(batch->result.error.message().find("'batch' request gave its place"), std::string::npos)
      << batch->result.error.message();
  EXPECT_FALSE(flex->done);
  ASSERT_TRUE(f.Submit(d2, 4, -1, Priority::kInteractive).ok());
  ASSERT_TRUE(flex->done);
  EXPECT_EQ(flex->result.error.code(), StatusCode::kResourceExhausted);
  // Nothing below "default" is left to give way.
  const Status st = f.Submit(d3, 4, -1, Priority::kInteractive);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(st.message().find("queue holds 2 of 2"), std::string::npos) << st.message();
  EXPECT_EQ(stats.rejected_by_reason.With({"displaced"}).value(), 2u);
  EXPECT_EQ(stats.rejected_by_reason.With({"queue_full"}).value(), 2u);
  f.RunToIdle();
  EXPECT_EQ(RecordingSink::order,
            (std::vector<std::string>{"batch", "flex", "running", "default1", "default2"}));
  EXPECT_EQ(d1->text, std::string(20, 'z'));
  EXPECT_EQ(f.engine->TotalKvCells(), 0);
}

TEST(Scheduler, ARunningBatchRequestGivesItsSessionToAWaitingInteractiveOne) {
  Fixture f(Opts(/*sessions=*/2, /*max_queue=*/4), std::string(40, 'z'));
  const auto stats = SchedulerStats::Register(f.registry, {"model"}, {"fake"});
  f.sched->SetGenAiStats(std::make_shared<telemetry::GenAiServerStats>(&f.registry, "fake"));
  auto old_batch = f.Sink("old batch"), new_batch = f.Sink("new batch");
  ASSERT_TRUE(f.Submit(old_batch, 4, -1, Priority::kBatch).ok());
  ASSERT_TRUE(f.sched->StepForTest());
  f.clock.Advance(std::chrono::milliseconds(10));
  ASSERT_TRUE(f.Submit(new_batch, 4, -1, Priority::kBatch).ok());
  ASSERT_TRUE(f.sched->StepForTest());
  ASSERT_TRUE(f.sched->StepForTest());
  // Both sessions run batch work; a default request arrives.
  auto interactive = f.Sink("interactive");
  ASSERT_TRUE(f.Submit(interactive, 4, -1, Priority::kInteractive).ok());
  ASSERT_TRUE(f.sched->StepForTest());
  // The newest batch request gave way, with a 503 and Retry-After; the
  // older one runs on.
  ASSERT_TRUE(new_batch->done);
  EXPECT_EQ(new_batch->result.finish, FinishReason::kError);
  EXPECT_EQ(new_batch->result.error.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(new_batch->result.error.retry_after_s(), 1);
  EXPECT_NE(new_batch->result.error.message().find("preempted"), std::string::npos);
  EXPECT_FALSE(old_batch->done);
  EXPECT_EQ(stats.rejected_by_reason.With({"preempted"}).value(), 1u);
  f.RunToIdle();
  EXPECT_EQ(interactive->text, std::string(40, 'z'));
  EXPECT_EQ(old_batch->text, std::string(40, 'z'));
  EXPECT_EQ(f.engine->TotalKvCells(), 0);
  // The preempted request runs again (its caller's retry): it is no failed
  // request in the failure rate the summaries carry, nor a finished one.
  EXPECT_EQ(stats.finished.With({"preempted"}).value(), 1u);
  EXPECT_EQ(stats.finished.With({"error"}).value(), 0u);
  EXPECT_EQ(stats.finished.With({"stop"}).value() + stats.finished.With({"length"}).value(), 2u);
  const std::string text = telemetry::PrometheusText(f.registry.Snapshot());
  EXPECT_EQ(text.find("error_type="), std::string::npos) << text;
  // Recorded once each, under the class that served it.
  for (const char* tier : {"default", "batch"}) {
    EXPECT_NE(text.find("gen_ai_server_request_duration_seconds_count{gen_ai_operation_name=\"text_"
                        "completion\","
                        "gen_ai_provider_name=\"outpost\",gen_ai_request_model=\"fake\","
                        "openai_response_service_tier=\"" +
                        std::string(tier) + "\"} 1"),
              std::string::npos)
        << tier << "\n"
        << text;
  }
  // Batch work waiting behind batch work preempts nothing.
  auto b1 = f.Sink("b1"), b2 = f.Sink("b2"), b3 = f.Sink("b3");
  ASSERT_TRUE(f.Submit(b1, 4, -1, Priority::kBatch).ok());
  ASSERT_TRUE(f.Submit(b2, 4, -1, Priority::kBatch).ok());
  ASSERT_TRUE(f.sched->StepForTest());
  ASSERT_TRUE(f.Submit(b3, 4, -1, Priority::kBatch).ok());
  f.RunToIdle();
  for (const auto& b : {b1, b2, b3}) {
    EXPECT_NE(b->result.finish, FinishReason::kError) << b->name;
  }
  EXPECT_EQ(stats.rejected_by_reason.With({"preempted"}).value(), 1u);
}

TEST(Scheduler, BatchSequencesSitOutTheStepsThatPrefillAHigherClassPrompt) {
  Fixture f(Opts(/*sessions=*/2, /*max_queue=*/4, /*batch_size=*/64, /*prefill_chunk=*/8),
            std::string(60, 'z'));
  auto batch = f.Sink("batch");
  ASSERT_TRUE(f.Submit(batch, 4, -1, Priority::kBatch).ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(f.sched->StepForTest());
  const std::string before = batch->text;
  ASSERT_FALSE(before.empty());
  auto interactive = f.Sink("interactive");
  ASSERT_TRUE(f.Submit(interactive, 40, -1, Priority::kInteractive).ok());
  int steps = 0;
  while (interactive->text.empty() && steps < 100) {
    ASSERT_TRUE(f.sched->StepForTest());
    ++steps;
  }
  ASSERT_FALSE(interactive->text.empty());
  EXPECT_EQ(batch->text, before);  // paused while the prompt was prefilled
  EXPECT_FALSE(batch->done);
  f.RunToIdle();
  // Then both run to their ends.
  EXPECT_EQ(batch->text, std::string(60, 'z'));
  EXPECT_EQ(interactive->text, std::string(60, 'z'));
}

TEST(Scheduler, APatientRequestGivesItsQueuePlaceToOneAClientWaitsOn) {
  Fixture f(Opts(/*sessions=*/1, /*max_queue=*/1), std::string(20, 'z'));
  const auto stats = SchedulerStats::Register(f.registry, {"model"}, {"fake"});
  auto running = f.Sink("running");
  ASSERT_TRUE(f.Submit(running).ok());
  ASSERT_TRUE(f.sched->StepForTest());
  auto patient_req = [] {
    GenerationRequest req;
    req.prompt.assign(4, 'a');
    req.max_queue_wait_ms = 600000;  // a background response's
    return req;
  };
  auto patient = f.Sink("patient"), patient2 = f.Sink("patient2");
  ASSERT_TRUE(f.sched->Submit(patient_req(), patient).ok());
  // Another patient one does not push it out: the queue is full for it.
  EXPECT_EQ(f.sched->Submit(patient_req(), patient2).code(), StatusCode::kResourceExhausted);
  EXPECT_FALSE(patient->done);
  // One a client waits on, of the same class, takes its place.
  auto client = f.Sink("client");
  ASSERT_TRUE(f.Submit(client).ok());
  ASSERT_TRUE(patient->done);
  EXPECT_EQ(patient->result.error.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(patient->result.error.message().find("to one a client is waiting on"),
            std::string::npos)
      << patient->result.error.message();
  EXPECT_GE(patient->result.error.retry_after_s(), 1);
  EXPECT_EQ(stats.rejected_by_reason.With({"displaced"}).value(), 1u);
  // A patient one of a higher class is not displaced by a default one.
  Fixture g(Opts(1, 1), std::string(20, 'z'));
  auto busy = g.Sink("busy"), urgent = g.Sink("urgent"), plain = g.Sink("plain");
  ASSERT_TRUE(g.Submit(busy).ok());
  ASSERT_TRUE(g.sched->StepForTest());
  GenerationRequest high = patient_req();
  high.priority = Priority::kPriority;
  ASSERT_TRUE(g.sched->Submit(std::move(high), urgent).ok());
  EXPECT_EQ(g.Submit(plain).code(), StatusCode::kResourceExhausted);
  EXPECT_FALSE(urgent->done);
}

TEST(Scheduler, ARequestWithItsOwnQueueWaitOutlastsTheDefaultAndKeepsItsPlace) {
  Fixture f(Opts(1, 4), std::string(50, 'z'));  // one session, max_queue_wait 1000 ms
  auto running = f.Sink("running"), patient = f.Sink("patient"), plain = f.Sink("plain");
  ASSERT_TRUE(f.Submit(running).ok());
  GenerationRequest req;
  req.prompt.assign(4, 'a');
  req.max_queue_wait_ms = 5000;
  ASSERT_TRUE(f.sched->Submit(std::move(req), patient).ok());  // first in the queue
  ASSERT_TRUE(f.Submit(plain).ok());
  ASSERT_TRUE(f.sched->StepForTest());
  f.clock.Advance(std::chrono::milliseconds(1001));
  ASSERT_TRUE(f.sched->StepForTest());
  // The plain one behind it expired; the patient one is still first in line.
  ASSERT_TRUE(plain->done);
  EXPECT_EQ(plain->result.error.code(), StatusCode::kResourceExhausted);
  EXPECT_FALSE(patient->done);
  f.clock.Advance(std::chrono::milliseconds(4000));
  ASSERT_TRUE(f.sched->StepForTest());
  ASSERT_TRUE(patient->done);
  EXPECT_EQ(patient->result.finish, FinishReason::kError);
  EXPECT_NE(patient->result.error.message().find("waited 5000 ms"), std::string::npos)
      << patient->result.error.message();
  EXPECT_FALSE(running->done);
}

TEST(Scheduler, QueuedRequestExpiresWithRetryAfterOnSimulatedTime) {
  Fixture f(Opts(1, 2), std::string(50, 'z'));
  auto running = f.Sink("running"), waiting = f.Sink("waiting");
  ASSERT_TRUE(f.Submit(running).ok());
  ASSERT_TRUE(f.Submit(waiting).ok());
  ASSERT_TRUE(f.sched->StepForTest());
  f.clock.Advance(std::chrono::milliseconds(999));
  ASSERT_TRUE(f.sched->StepForTest());
  EXPECT_FALSE(waiting->done);  // not yet past max_queue_wait
  f.clock.Advance(std::chrono::milliseconds(2));
  ASSERT_TRUE(f.sched->StepForTest());
  ASSERT_TRUE(waiting->done);
  EXPECT_EQ(waiting->result.finish, FinishReason::kError);
  EXPECT_EQ(waiting->result.error.code(), StatusCode::kResourceExhausted);
  EXPECT_GE(waiting->result.error.retry_after_s(), 1);
  EXPECT_NE(waiting->result.error.message().find("waited 1000 ms"), std::string::npos);
  EXPECT_TRUE(waiting->text.empty());
  EXPECT_FALSE(running->done);  // the running request is untouched
  const auto stats = SchedulerStats::Register(f.registry, {"model"}, {"fake"});
  EXPECT_EQ(stats.rejected.value(), 1u);
  EXPECT_EQ(stats.rejected_by_reason.With({"queue_timeout"}).value(), 1u);
  EXPECT_EQ(stats.rejected_by_reason.With({"queue_full"}).value(), 0u);
  // Draining: new requests are turned away and counted as such; the running
  // one goes on.
  f.sched->BeginDrain();
  auto late = f.Sink("late");
  EXPECT_EQ(f.Submit(late).code(), StatusCode::kUnavailable);
  EXPECT_EQ(stats.rejected_by_reason.With({"shutting_down"}).value(), 1u);
  while (!running->done && f.sched->StepForTest()) {
  }
  EXPECT_TRUE(running->done);
  EXPECT_NE(running->result.finish, FinishReason::kError);
  EXPECT_EQ(stats.finished.With({FinishReasonName(running->result.finish)}).value(), 1u);
}

TEST(Scheduler, QueueTimeAndKvUsageAreMeasured) {
  Fixture f(Opts(1, 2), std::string(20, 'z'));
  auto running = f.Sink("running"), waiting = f.Sink("waiting");
  ASSERT_TRUE(f.Submit(running, 8).ok());
  ASSERT_TRUE(f.Submit(waiting, 8).ok());
  ASSERT_TRUE(f.sched->StepForTest());  // `running` takes the only session at once
  const auto stats = SchedulerStats::Register(f.registry, {"model"}, {"fake"});
  ASSERT_GT(stats.kv_bytes_limit.value(), 0);
  EXPECT_GT(stats.kv_usage_ratio.value(), 0);
  EXPECT_DOUBLE_EQ(stats.kv_usage_ratio.value(),
                   stats.kv_bytes_used.value() / stats.kv_bytes_limit.value());
  f.clock.Advance(std::chrono::milliseconds(400));  // `waiting` waits this long
  f.RunToIdle();
  ASSERT_TRUE(waiting->done);
  const auto q = stats.queue_time.Snapshot();
  EXPECT_EQ(q.count, 2u);
  EXPECT_NEAR(q.sum, 0.4, 1e-9);  // 0 for `running`, 0.4 s for `waiting`
}

TEST(Scheduler, BatchLinesStayOutOfTheLatencyHistograms) {
  // A batch line waits and pauses for interactive work by design; the
  // latency histograms are what interactive users wait for.
  Fixture f(Opts(2, 4), std::string(20, 'z'));
  const auto stats = SchedulerStats::Register(f.registry, {"model"}, {"fake"});
  auto batch = f.Sink("batch"), flex = f.Sink("flex"), user = f.Sink("user");
  ASSERT_TRUE(f.Submit(batch, 4, 6, Priority::kBatch).ok());
  ASSERT_TRUE(f.Submit(flex, 4, 6, Priority::kFlex).ok());
  ASSERT_TRUE(f.Submit(user, 4, 6, Priority::kInteractive).ok());
  f.clock.Advance(std::chrono::milliseconds(300));
  f.RunToIdle();
  ASSERT_TRUE(batch->done && flex->done && user->done);
  EXPECT_EQ(batch->text, std::string(6, 'z'));
  EXPECT_EQ(stats.time_to_first_token.Snapshot().count, 2u);  // flex and user
  EXPECT_EQ(stats.request_duration.Snapshot().count, 2u);
  EXPECT_EQ(stats.queue_time.Snapshot().count, 2u);
  EXPECT_EQ(stats.inter_token_latency.Snapshot().count, 2u * 5);  // 5 gaps in 6 tokens each
  EXPECT_EQ(stats.finished.With({"length"}).value(), 3u);         // counted as ever
}

TEST(Scheduler, PrefillIsChunkedWhileOthersDecode) {
  // batch_size 16, prefill_chunk 4: while `a` decodes, `b`'s 40-token prompt
  // enters at most 4 tokens per step; alone, a prompt takes the whole batch.
  Fixture f(Opts(2, 0, /*batch_size=*/16, /*prefill_chunk=*/4), std::string(30, 'y'));
  auto a = f.Sink("a"), b = f.Sink("b");
  ASSERT_TRUE(f.Submit(a, 40).ok());
  ASSERT_TRUE(f.sched->StepForTest());
  ASSERT_EQ(f.engine->batches.back().size(), 16u);  // alone: a whole batch of prompt
  while (f.engine->KvCells(0) < 40) ASSERT_TRUE(f.sched->StepForTest());
  ASSERT_TRUE(f.Submit(b, 40).ok());
  const size_t first = f.engine->batches.size();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(f.sched->StepForTest());
  for (size_t i = first; i < f.engine->batches.size(); ++i) {
    const auto& batch = f.engine->batches[i];
    int prompt_tokens = 0, decode_tokens = 0;
    for (const auto& e : batch) (e.seq == 1 ? prompt_tokens : decode_tokens)++;
    EXPECT_EQ(decode_tokens, 1) << "step " << i;
    EXPECT_LE(prompt_tokens, 4) << "step " << i;
  }
  f.RunToIdle();
  EXPECT_EQ(b->text, std::string(30, 'y'));
  EXPECT_EQ(f.engine->violations, 0);
}

TEST(Scheduler, AStepBudgetSizesThePrefillChunkFromMeasuredStepCosts) {
  // A modelled CPU: a step costs 4 ms plus 0.25 ms per token in the batch.
  auto cost_us = [](size_t tokens) { return 4000 + 250 * static_cast<int64_t>(tokens); };
  for (const int64_t budget_ms : {int64_t{20}, int64_t{3}}) {
    SchedulerOptions o = Opts(3, 0, /*batch_size=*/512, /*prefill_chunk=*/256);
    o.ctx_per_session = 4096;
    o.step_budget_ms = budget_ms;
    Fixture f(o, std::string(400, 'y'));
    f.engine->on_decode = [&](size_t n) { f.clock.Advance(std::chrono::microseconds(cost_us(n))); };
    auto a = f.Sink("a"), b = f.Sink("b"), c = f.Sink("c");
    ASSERT_TRUE(f.Submit(a, 4).ok());
    ASSERT_TRUE(f.Submit(b, 4).ok());
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(f.sched->StepForTest());  // decode-only: 4.5 ms
    ASSERT_TRUE(f.Submit(c, 2000).ok());
    const size_t first = f.engine->batches.size();
    while (f.engine->KvCells(2) < 2000) ASSERT_TRUE(f.sched->StepForTest());
    // The first prefill step knows no prompt-token cost yet (a whole
    // prefill_chunk); from then on each step is sized from what it measured.
    ASSERT_EQ(f.engine->batches[first].size(), 2u + 256u);
    int64_t longest_us = 0;
    for (size_t i = first + 1; i < f.engine->batches.size(); ++i) {
      const auto& batch = f.engine->batches[i];
      int prompt = 0;
      for (const auto& e : batch) prompt += e.seq == 2 ? 1 : 0;
      EXPECT_EQ(batch.size() - prompt, 2u) << "step " << i;  // every stream decodes each step
      const bool last = i + 1 == f.engine->batches.size();
      if (!last) {
        EXPECT_GE(prompt, Scheduler::kMinBudgetChunk) << "step " << i;
      }
      longest_us = std::max(longest_us, cost_us(batch.size()));
    }
    const auto stats = SchedulerStats::Register(f.registry, {"model"}, {"fake"});
    if (budget_ms == 20) {
      // (20 ms - 4.5 ms) / 0.25 ms = 62 prompt tokens: steps of 20 ms, not 68.5.
      EXPECT_LE(longest_us, 20'000);
      EXPECT_EQ(stats.prefill_chunk_tokens.value(), 62);
    } else {
      // Decoding alone takes longer than 3 ms: the prompt still advances.
      EXPECT_EQ(stats.prefill_chunk_tokens.value(), Scheduler::kMinBudgetChunk);
    }
    f.RunToIdle();
    EXPECT_EQ(c->text, std::string(400, 'y'));
    EXPECT_EQ(f.engine->violations, 0);
  }
}

TEST(Scheduler, PromptsArePrefilledInAdmissionClassOrder) {
  SchedulerOptions o = Opts(3, 0, /*batch_size=*/16, /*prefill_chunk=*/8);
  Fixture f(o, std::string(40, 'y'));
  auto a = f.Sink("a"), batch = f.Sink("batch"), prio = f.Sink("priority");
  ASSERT_TRUE(f.Submit(a, 4).ok());
  ASSERT_TRUE(f.sched->StepForTest());  // `a` decodes from now on
  ASSERT_TRUE(f.Submit(batch, 40, -1, Priority::kBatch).ok());
  ASSERT_TRUE(f.sched->StepForTest());  // the batch prompt (seq 1) starts
  ASSERT_EQ(f.engine->KvCells(1), 8);
  ASSERT_TRUE(f.Submit(prio, 40, -1, Priority::kPriority).ok());
  ASSERT_TRUE(f.sched->StepForTest());
  // One decode token for `a`, then the priority prompt's chunk (seq 2);
  // nothing of the batch prompt's although it started first.
  const auto& step = f.engine->batches.back();
  int of_batch = 0, of_prio = 0;
  for (const auto& e : step) {
    of_batch += e.seq == 1 ? 1 : 0;
    of_prio += e.seq == 2 ? 1 : 0;
  }
  EXPECT_EQ(of_prio, 8);
  EXPECT_EQ(of_batch, 0);
  f.RunToIdle();
  EXPECT_EQ(batch->text, std::string(40, 'y'));
  EXPECT_EQ(prio->text, std::string(40, 'y'));
}

// Counts the entries of the last engine step that belong to sequences [lo, hi].
static int InLastStep(const FakeEngine& e, int lo, int hi) {
  int n = 0;
  for (const auto& x : e.batches.back()) n += x.seq >= lo && x.seq <= hi ? 1 : 0;
  return n;
}

TEST(Scheduler, BatchWorkIsRationedWhileUsersAreActive) {
  for (const int32_t busy_tokens : {1, 2}) {
    SCOPED_TRACE(busy_tokens);
    SchedulerOptions o = Opts(4, 0, /*batch_size=*/64, /*prefill_chunk=*/32);
    o.batch_yield_ms = 1000;
    o.batch_busy_tokens = busy_tokens;
    Fixture f(o, std::string(200, 'b'));
    // Three batch requests take sequences 0..2 and decode at full width.
    std::vector<std::shared_ptr<RecordingSink>> batch;
    for (int i = 0; i < 3; ++i) {
      batch.push_back(f.Sink("b" + std::to_string(i)));
      ASSERT_TRUE(f.Submit(batch.back(), 4, 60, Priority::kBatch).ok());
    }
    ASSERT_TRUE(f.sched->StepForTest());
    ASSERT_TRUE(f.sched->StepForTest());
    EXPECT_EQ(InLastStep(*f.engine, 0, 2), 3) << "no user yet: every batch sequence decodes";
    // A user arrives (sequence 3) and streams 8 tokens.
    auto user = f.Sink("user");
    ASSERT_TRUE(f.Submit(user, 4, 8).ok());
    ASSERT_TRUE(f.sched->StepForTest());  // the user's prompt: batch sits out
    EXPECT_EQ(InLastStep(*f.engine, 0, 2), 0);
    while (!user->done) {
      ASSERT_TRUE(f.sched->StepForTest());
      EXPECT_LE(InLastStep(*f.engine, 0, 2), busy_tokens) << "rationed beside the user";
    }
    // Within batch_yield_ms of the user's last token the ration holds ...
    f.clock.Advance(std::chrono::milliseconds(900));
    ASSERT_TRUE(f.sched->StepForTest());
    EXPECT_EQ(InLastStep(*f.engine, 0, 2), busy_tokens);
    // ... and after it the batch takes every sequence again.
    f.clock.Advance(std::chrono::milliseconds(200));
    ASSERT_TRUE(f.sched->StepForTest());
    EXPECT_EQ(InLastStep(*f.engine, 0, 2), 3);
    f.RunToIdle();
    for (const auto& b : batch) EXPECT_EQ(b->text, std::string(60, 'b'));
    EXPECT_EQ(user->text, std::string(8, 'b'));
    EXPECT_EQ(f.engine->violations, 0);
  }
}

TEST(Scheduler, RatesArePublishedEachBusySecondAndWhenAShortBurstEnds) {
  Fixture f(Opts(2, 0), std::string(400, 'y'));
  f.engine->on_decode = [&](size_t) { f.clock.Advance(std::chrono::milliseconds(20)); };
  const auto stats = SchedulerStats::Register(f.registry, {"model"}, {"fake"});
  // Two steps (40 ms of work) are too short a window to publish anything.
  auto a = f.Sink("a");
  ASSERT_TRUE(f.Submit(a, 4, 2).ok());
  f.RunToIdle();
  ASSERT_TRUE(a->done);
  EXPECT_EQ(f.engine->batches.size(), 2u);
  EXPECT_EQ(stats.decode_tokens_per_second.value(), 0);
  // Ten more steps: the burst ends with 240 ms of busy time in the window
  // (the idle gap between the bursts does not count): 12 tokens sampled, 8
  // prompt tokens decoded.
  f.clock.Advance(std::chrono::seconds(5));
  auto b = f.Sink("b");
  ASSERT_TRUE(f.Submit(b, 4, 10).ok());
  f.RunToIdle();
  ASSERT_TRUE(b->done);
  EXPECT_EQ(f.engine->batches.size(), 12u);
  EXPECT_DOUBLE_EQ(stats.decode_tokens_per_second.value(), 12 / 0.24);
  EXPECT_DOUBLE_EQ(stats.prefill_tokens_per_second.value(), 8 / 0.24);
  // While a request runs, a window closes on each busy second (50 steps)
  // and the published rate is the mean of the old and the new.
  auto c = f.Sink("c");
  ASSERT_TRUE(f.Submit(c, 4, 100).ok());
  for (int i = 0; i < 49; ++i) ASSERT_TRUE(f.sched->StepForTest());
  EXPECT_DOUBLE_EQ(stats.decode_tokens_per_second.value(), 12 / 0.24);
  ASSERT_TRUE(f.sched->StepForTest());
  EXPECT_DOUBLE_EQ(stats.decode_tokens_per_second.value(), 0.5 * (12 / 0.24) + 0.5 * 50);
  EXPECT_FALSE(c->done);
  f.RunToIdle();
}

TEST(Scheduler, RationedBatchPromptsAdvanceByTheRation) {
  SchedulerOptions o = Opts(2, 0, /*batch_size=*/64, /*prefill_chunk=*/32);
  o.batch_yield_ms = 1000;
  o.batch_busy_tokens = 3;
  Fixture f(o, std::string(100, 'u'));
  auto user = f.Sink("user"), batch = f.Sink("batch");
  ASSERT_TRUE(f.Submit(user, 4, 50).ok());
  ASSERT_TRUE(f.sched->StepForTest());  // the user decodes in sequence 0
  ASSERT_TRUE(f.Submit(batch, 20, 4, Priority::kBatch).ok());
  ASSERT_TRUE(f.sched->StepForTest());
  EXPECT_EQ(f.engine->KvCells(1), 3) << "3 prompt tokens a step, not the 32-token chunk";
  ASSERT_TRUE(f.sched->StepForTest());
  EXPECT_EQ(f.engine->KvCells(1), 6);
  f.RunToIdle();
  EXPECT_EQ(batch->text, "uuuu");
  EXPECT_EQ(user->text, std::string(50, 'u'));
}

TEST(Scheduler, AUserArrivingDuringABatchOnlyStepCutsItShort) {
  SchedulerOptions o = Opts(2, 0, /*batch_size=*/64, /*prefill_chunk=*/32);
  o.batch_yield_ms = 1000;
  Fixture f(o, std::string(30, 'b'));
  const auto stats = SchedulerStats::Register(f.registry, {"model"}, {"fake"});
  auto batch = f.Sink("batch"), user = f.Sink("user");
  ASSERT_TRUE(f.Submit(batch, 4, 20, Priority::kBatch).ok());
  ASSERT_TRUE(f.sched->StepForTest());
  ASSERT_TRUE(f.sched->StepForTest());
  EXPECT_EQ(f.engine->interrupted, 0);
  // The user's request arrives while the next batch step runs.
  bool submitted = false;
  f.engine->on_decode_start = [&] {
    if (!submitted) submitted = f.Submit(user, 4, 5).ok();
  };
  const size_t decoded = f.engine->batches.size();
  const int32_t cells = f.engine->KvCells(0);
  ASSERT_TRUE(f.sched->StepForTest());
  ASSERT_TRUE(submitted);
  EXPECT_EQ(f.engine->interrupted, 1);
  EXPECT_EQ(f.engine->batches.size(), decoded) << "the interrupted step decoded nothing";
  EXPECT_EQ(f.engine->KvCells(0), cells);
  EXPECT_EQ(stats.batch_steps_interrupted.value(), 1u);
  // The next step is the user's prompt alone (the batch sits it out).
  ASSERT_TRUE(f.sched->StepForTest());
  for (const auto& e : f.engine->batches.back()) EXPECT_EQ(e.seq, 1);
  EXPECT_EQ(f.engine->batches.back().size(), 4u);
  // Steps that carry the user's tokens are never interrupted.
  const int before = f.engine->interrupted;
  f.engine->on_decode_start = [&] {
    ADD_FAILURE() << "a step with a user's tokens was interruptible";
  };
  while (!user->done) ASSERT_TRUE(f.sched->StepForTest());
  EXPECT_EQ(f.engine->interrupted, before);
  f.engine->on_decode_start = nullptr;
  f.RunToIdle();
  // The batch request's answer is whole: the undone step was redone.
  EXPECT_EQ(batch->text, std::string(20, 'b'));
  EXPECT_EQ(user->text, "bbbbb");
  EXPECT_EQ(f.engine->violations, 0);
}

TEST(Scheduler, BatchStepsAreNotInterruptibleWithoutBatchYield) {
  SchedulerOptions o = Opts(2, 0, /*batch_size=*/64, /*prefill_chunk=*/32);
  o.batch_yield_ms = 0;
  Fixture f(o, std::string(30, 'b'));
  auto batch = f.Sink("batch"), user = f.Sink("user");
  ASSERT_TRUE(f.Submit(batch, 4, 10, Priority::kBatch).ok());
  int starts = 0;
  f.engine->on_decode_start = [&] { ++starts; };
  ASSERT_TRUE(f.sched->StepForTest());
  ASSERT_TRUE(f.Submit(user, 4, 3).ok());
  f.RunToIdle();
  EXPECT_EQ(starts, 0);
  EXPECT_EQ(batch->text, std::string(10, 'b'));
  EXPECT_EQ(user->text, "bbb");
}

TEST(Scheduler, CancelledRequestFreesItsKvAtTheNextStep) {
  Fixture f(Opts(1, 1), std::string(100, 'w'));
  auto a = f.Sink("a"), next = f.Sink("next");
  ASSERT_TRUE(f.Submit(a, 10).ok());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(f.sched->StepForTest());
  EXPECT_GT(f.engine->KvCells(0), 10);
  ASSERT_TRUE(f.Submit(next, 4, 3).ok());  // queued behind `a`
  a->cancel = true;
  const size_t decoded = f.engine->batches.size();
  ASSERT_TRUE(f.sched->StepForTest());
  ASSERT_TRUE(a->done);
  EXPECT_EQ(a->result.finish, FinishReason::kCancelled);
  EXPECT_EQ(f.engine->removed[0], 1);
  // The step after the cancel decoded nothing of `a`.
  for (size_t i = decoded; i < f.engine->batches.size(); ++i) {
    for (const auto& e : f.engine->batches[i]) EXPECT_NE(e.token, 'w');
  }
  f.RunToIdle();
  EXPECT_EQ(next->text, "www");  // the freed session served the queued request
  EXPECT_EQ(f.engine->TotalKvCells(), 0);
}

TEST(Scheduler, CancelledWhileQueuedLeavesTheQueue) {
  Fixture f(Opts(1, 1), std::string(20, 'q'));
  auto a = f.Sink("a"), queued = f.Sink("queued"), later = f.Sink("later");
  ASSERT_TRUE(f.Submit(a).ok());
  ASSERT_TRUE(f.Submit(queued).ok());
  ASSERT_TRUE(f.sched->StepForTest());
  EXPECT_EQ(f.Submit(later).code(), StatusCode::kResourceExhausted);  // queue full
  queued->cancel = true;
  ASSERT_TRUE(f.sched->StepForTest());
  EXPECT_TRUE(queued->done);
  EXPECT_EQ(queued->result.finish, FinishReason::kCancelled);
  EXPECT_TRUE(f.Submit(later).ok());  // its place in the queue is free again
}

TEST(Scheduler, RejectsPromptsThatDoNotFitNamingTheField) {
  Fixture f(Opts(1, 0));
  auto s = f.Sink("s");
  Status empty = f.Submit(s, 0);
  EXPECT_EQ(empty.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(empty.param(), "prompt");
  EXPECT_EQ(empty.error_code(), "");
  Status too_long = f.Submit(s, 128);
  EXPECT_EQ(too_long.param(), "prompt");
  EXPECT_NE(too_long.message().find("128 tokens"), std::string::npos);
  // OpenAI's code for it, which clients test to trim and retry.
  EXPECT_EQ(too_long.error_code(), "context_length_exceeded");
  Status too_much = f.Submit(s, 100, 50);
  EXPECT_EQ(too_much.param(), "max_tokens");
  EXPECT_NE(too_much.message().find("150 were requested"), std::string::npos);
  EXPECT_EQ(too_much.error_code(), "context_length_exceeded");
  EXPECT_FALSE(s->done);
}

TEST(Scheduler, DecodeFailureFailsTheBatchAndKeepsServing) {
  Fixture f(Opts(1, 0));
  auto a = f.Sink("a");
  ASSERT_TRUE(f.Submit(a).ok());
  f.engine->fail_next_decode = true;
  f.RunToIdle();
  EXPECT_EQ(a->result.finish, FinishReason::kError);
  EXPECT_EQ(a->result.error.code(), StatusCode::kInternal);
  auto b = f.Sink("b");
  ASSERT_TRUE(f.Submit(b).ok());
  f.RunToIdle();
  EXPECT_EQ(b->text, "hello");
}

TEST(Scheduler, StopAnswersQueuedRequestsWithUnavailable) {
  Fixture f(Opts(1, 1));
  auto a = f.Sink("a"), b = f.Sink("b");
  ASSERT_TRUE(f.Submit(a).ok());
  ASSERT_TRUE(f.Submit(b).ok());
  ASSERT_TRUE(f.sched->StepForTest());
  f.sched->Stop();
  EXPECT_EQ(a->result.error.code(), StatusCode::kUnavailable);
  EXPECT_EQ(b->result.error.code(), StatusCode::kUnavailable);
  EXPECT_EQ(f.Submit(f.Sink("c")).code(), StatusCode::kUnavailable);
}

TEST(Scheduler, ChoicesShareOnePrefillAndEndWithOneDone) {
  Fixture f(Opts(4, 4));
  auto s = f.Sink("s");
  ASSERT_TRUE(f.Submit(s, /*n=*/40, -1, Priority::kInteractive, /*choices=*/3).ok());
  f.RunToIdle();
  ASSERT_TRUE(s->done);
  ASSERT_EQ(s->choices.size(), 3u);
  for (const auto& c : s->choices) EXPECT_EQ(c, "hello");
  EXPECT_EQ(s->result.choices.size(), 3u);
  for (auto c : s->result.choices) EXPECT_EQ(c, FinishReason::kStop);
  EXPECT_EQ(s->result.usage.prompt_tokens, 40);      // once
  EXPECT_EQ(s->result.usage.completion_tokens, 15);  // 3 x "hello"
  EXPECT_EQ(f.engine->copies, 2);                    // the prompt's KV, copied twice
  int prompt_tokens_decoded = 0;
  for (const auto& b : f.engine->batches) {
    for (const auto& e : b) prompt_tokens_decoded += e.pos < 40 ? 1 : 0;
  }
  EXPECT_EQ(prompt_tokens_decoded, 40);  // computed once, not three times
  EXPECT_EQ(f.engine->violations, 0);
  EXPECT_EQ(f.engine->TotalKvCells(), 0);
}

TEST(Scheduler, ChoicesAreAdmittedTogetherOrWait) {
  Fixture f(Opts(3, 4));
  auto one = f.Sink("one"), three = f.Sink("three");
  ASSERT_TRUE(f.Submit(one, 4, 20).ok());
  ASSERT_TRUE(f.Submit(three, 4, -1, Priority::kInteractive, 3).ok());
  f.sched->StepForTest();
  EXPECT_EQ(f.sched->Snapshot().active, 1);  // 2 slots idle, but "three" needs 3
  EXPECT_EQ(f.sched->Snapshot().queued, 3);
  f.RunToIdle();
  EXPECT_TRUE(one->done && three->done);
  EXPECT_EQ(RecordingSink::order, (std::vector<std::string>{"one", "three"}));
  // More choices than sessions can never be admitted: refused up front.
  auto too_many = f.Sink("x");
  const Status st = f.Submit(too_many, 4, -1, Priority::kInteractive, 4);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.param(), "n");
}

TEST(Scheduler, CancellingAChoiceRequestFreesEverySession) {
  Fixture f(Opts(3, 0), std::string(200, 'z'));
  auto s = f.Sink("s");
  ASSERT_TRUE(f.Submit(s, 4, -1, Priority::kInteractive, 3).ok());
  for (int i = 0; i < 3; ++i) f.sched->StepForTest();
  EXPECT_EQ(f.sched->Snapshot().active, 3);
  s->cancel = true;
  f.sched->StepForTest();
  EXPECT_TRUE(s->done);
  EXPECT_EQ(s->result.finish, FinishReason::kCancelled);
  EXPECT_EQ(f.sched->Snapshot().active, 0);
  EXPECT_EQ(f.engine->TotalKvCells(), 0);
}

}  // namespace
}  // namespace outpost::scheduler

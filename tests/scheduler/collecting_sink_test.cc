#include "outpost/scheduler/collecting_sink.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace outpost::scheduler {
namespace {

using std::chrono::milliseconds;

TEST(CollectingSink, CollectsChoiceZeroAndTheResult) {
  CollectingSink sink;
  sink.OnText(0, "Hel");
  sink.OnText(1, "other choice");
  sink.OnText(0, "lo");
  GenerationResult r;
  r.finish = FinishReason::kStop;
  r.usage.completion_tokens = 2;
  sink.OnDone(r);
  EXPECT_TRUE(sink.Wait(milliseconds(0)));
  EXPECT_EQ(sink.text(), "Hello");
  EXPECT_EQ(sink.result().finish, FinishReason::kStop);
  EXPECT_EQ(sink.result().usage.completion_tokens, 2);
}

TEST(CollectingSink, WaitTimesOutBeforeOnDone) {
  CollectingSink sink;
  sink.OnText(0, "partial");
  EXPECT_FALSE(sink.Wait(milliseconds(20)));
  EXPECT_EQ(sink.result().finish, FinishReason::kNone);
}

TEST(CollectingSink, WaitWakesWhenAnotherThreadFinishes) {
  CollectingSink sink;
  std::thread engine([&] {
    std::this_thread::sleep_for(milliseconds(30));
    sink.OnText(0, "done");
    GenerationResult r;
    r.finish = FinishReason::kLength;
    sink.OnDone(r);
  });
  sink.Wait();  // no timeout
  EXPECT_EQ(sink.text(), "done");
  EXPECT_EQ(sink.result().finish, FinishReason::kLength);
  engine.join();
}

TEST(CollectingSink, CancelledAsksItsPredicate) {
  EXPECT_FALSE(CollectingSink().Cancelled());
  std::atomic<bool> gone{false};
  CollectingSink sink([&] { return gone.load(); });
  EXPECT_FALSE(sink.Cancelled());
  gone = true;
  EXPECT_TRUE(sink.Cancelled());
}

}  // namespace
}  // namespace outpost::scheduler

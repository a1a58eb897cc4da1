#include "outpost/api/background_runs.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "mocks/sim_clock.h"

namespace outpost::api {
namespace {

std::vector<std::string> All(BackgroundRun& run, int64_t after = -1) {
  bool ended = false;
  return run.EventsAfter(after, 0, &ended);
}

TEST(BackgroundRun, SplitsTheStreamIntoEventsHoweverItIsCut) {
  const std::string sse =
      "event: response.created\ndata: {\"sequence_number\":0}\n\n"
      "event: response.output_text.delta\r\ndata: {\"sequence_number\":1}\r\n\r\n"
      "\n"  // a stray blank line is no event
      "event: response.completed\ndata: {\"sequence_number\":2}\n\n";
  for (size_t chunk : {size_t{1}, size_t{5}, sse.size()}) {
    BackgroundRun run("resp_a", "");
    for (size_t at = 0; at < sse.size(); at += chunk)
      run.Write(std::string_view(sse).substr(at, chunk));
    const auto events = All(run);
    ASSERT_EQ(events.size(), 3u) << chunk;
    EXPECT_EQ(events[0], "event: response.created\ndata: {\"sequence_number\":0}\n\n");
    EXPECT_EQ(events[1],
              "event: response.output_text.delta\r\ndata: {\"sequence_number\":1}\r\n\r\n");
    EXPECT_EQ(events[2], "event: response.completed\ndata: {\"sequence_number\":2}\n\n");
    // starting_after: what follows event 0.
    EXPECT_EQ(All(run, 0), std::vector<std::string>(events.begin() + 1, events.end()));
    EXPECT_TRUE(All(run, 2).empty());
  }
}

TEST(BackgroundRuns, ReadersTailARunAndSeeItEnd) {
  testing::SimClock clock;
  BackgroundRuns runs(4, 60'000, &clock);
  std::atomic<bool> go{false};
  auto run = runs.Start("resp_a", "k1", [&](const std::shared_ptr<BackgroundRun>& r) {
    r->Write("data: one\n\n");
    while (!go) std::this_thread::yield();
    r->Write("data: two\n\ndata: three");  // the last without its blank line
  });
  ASSERT_TRUE(run.ok()) << run.status().message();
  bool ended = true;
  auto first = (*run)->EventsAfter(-1, 10'000, &ended);
  ASSERT_EQ(first, std::vector<std::string>{"data: one\n\n"});
  EXPECT_FALSE(ended);
  EXPECT_EQ(runs.Running(), 1u);
  go = true;
  std::vector<std::string> rest;
  for (int64_t after = 0; !ended;) {
    for (auto& e : (*run)->EventsAfter(after, 10'000, &ended)) {
      rest.push_back(std::move(e));
      ++after;
    }
  }
  EXPECT_EQ(rest, (std::vector<std::string>{"data: two\n\n", "data: three\n\n"}));
  EXPECT_TRUE((*run)->WaitDone(10'000));
  EXPECT_EQ(runs.Running(), 0u);
  // Kept for late readers, for its owner only, then forgotten.
  EXPECT_EQ(runs.Find("k1", "resp_a"), *run);
  EXPECT_EQ(runs.Find("k2", "resp_a"), nullptr);
  clock.Advance(std::chrono::seconds(61));
  EXPECT_EQ(runs.Find("k1", "resp_a"), nullptr);
}

TEST(BackgroundRuns, CancelReachesTheWorkAndStopEndsEveryRun) {
  testing::SimClock clock;
  BackgroundRuns runs(2, 60'000, &clock);
  auto spin = [](const std::shared_ptr<BackgroundRun>& r) {
    while (!r->cancelled()) std::this_thread::yield();
    r->Write("data: cancelled\n\n");
  };
  auto a = runs.Start("resp_a", "", spin);
  auto b = runs.Start("resp_b", "", spin);
  ASSERT_TRUE(a.ok() && b.ok());
  // Two running: a third waits for one to end.
  auto c = runs.Start("resp_c", "", spin);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted);
  EXPECT_GT(c.status().retry_after_s(), 0);
  EXPECT_EQ(runs.Start("resp_a", "", spin).status().code(), StatusCode::kResourceExhausted);
  (*a)->Cancel();
  ASSERT_TRUE((*a)->WaitDone(10'000));
  EXPECT_EQ(All(**a), std::vector<std::string>{"data: cancelled\n\n"});
  // The same id again is refused while it is kept; another starts.
  EXPECT_EQ(runs.Start("resp_a", "", spin).status().code(), StatusCode::kInvalidArgument);
  auto d = runs.Start("resp_d", "", spin);
  ASSERT_TRUE(d.ok());
  runs.Stop();
  EXPECT_TRUE((*b)->done() && (*d)->done());
  EXPECT_TRUE((*b)->cancelled());
  EXPECT_EQ(runs.Start("resp_e", "", spin).status().code(), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace outpost::api

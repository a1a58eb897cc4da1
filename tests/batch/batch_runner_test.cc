#include "outpost/batch/batch_runner.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "mocks/sim_clock.h"
#include "mocks/temp_file.h"

namespace outpost::batch {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// Polls `done` for up to 20 s (never a timing assertion: a deadline for a
// condition that must come).
template <typename F>
bool Eventually(F done) {
  for (int i = 0; i < 2000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return done();
}

struct Fixture {
  Fixture() {
    path = testing::TempPath(".db");
    store = std::move(BatchStore::Open(path)).value();
  }
  void AddBatch(const std::string& id, int lines, int64_t expires_at = 1'800'000'000) {
    BatchObject b;
    b.id = id;
    b.owner = "k";
    b.endpoint = "/v1/completions";
    b.status = BatchStatus::kInProgress;
    b.created_at = 1'700'000'000;
    b.expires_at = expires_at;
    b.headers_json = R"({"Authorization":"Bearer secret"})";
    std::vector<BatchLine> ls;
    for (int i = 0; i < lines; ++i) {
      ls.push_back({i, "c" + std::to_string(i), "/v1/completions",
                    json{{"prompt", "p" + std::to_string(i)}}.dump(), "k"});
    }
    ASSERT_TRUE(store->CreateBatch(b, ls).ok());
  }
  BatchStatus StatusOf(const std::string& id) { return store->GetBatch("k", id)->status; }
  std::vector<json> Output(const std::string& id, bool errors = false) {
    auto b = store->GetBatch("k", id);
    const std::string file = errors ? b->error_file_id : b->output_file_id;
    std::vector<json> out;
    if (file.empty()) return out;
    const std::string text = *store->FileContent("k", file);
    for (size_t pos = 0; pos < text.size();) {
      const size_t end = text.find('\n', pos);
      out.push_back(json::parse(text.substr(pos, end - pos)));
      pos = end + 1;
    }
    return out;
  }

  std::string path;
  std::unique_ptr<BatchStore> store;
  testing::SimClock clock;
};

std::string PromptOf(const LineRequest& r) {
  return json::parse(r.body)["prompt"].get<std::string>();
}

LineResult Ok(const LineRequest& r) {
  LineResult out;
  out.status_code = 200;
  out.request_id = "cmpl-" + PromptOf(r);
  out.body = json{{"id", out.request_id}, {"echo", PromptOf(r)}}.dump();
  return out;
}

TEST(BatchRunner, RunsEveryLineOnceWithTheBatchHeadersAndCompletesTheBatch) {
  Fixture fx;
  fx.AddBatch("batch_a", 12);
  std::mutex mu;
  std::map<std::string, int> runs;
  int running = 0;
  int most = 0;
  bool first_ran_alone = true;
  RunnerOptions o;
  o.parallel = 4;
  o.poll_ms = 20;
  BatchRunner runner(
      fx.store.get(),
      [&](const LineRequest& r, const std::function<bool()>&) {
        {
          std::lock_guard<std::mutex> lock(mu);
          EXPECT_EQ(json::parse(r.headers_json)["Authorization"], "Bearer secret");
          ++runs[PromptOf(r)];
          ++running;
          most = std::max(most, running);
          if (runs.size() == 1 && running > 1) first_ran_alone = false;
        }
        std::this_thread::sleep_for(5ms);
        std::lock_guard<std::mutex> lock(mu);
        --running;
        return Ok(r);
      },
      o, &fx.clock);
  runner.Start();
  ASSERT_TRUE(Eventually([&] { return fx.StatusOf("batch_a") == BatchStatus::kCompleted; }));
  runner.Stop();
  EXPECT_EQ(runs.size(), 12u);
  for (const auto& [prompt, n] : runs) EXPECT_EQ(n, 1) << prompt;
  EXPECT_TRUE(first_ran_alone);
  EXPECT_LE(most, 4);
  const auto out = fx.Output("batch_a");
  ASSERT_EQ(out.size(), 12u);
  EXPECT_EQ(out[3]["custom_id"], "c3");
  EXPECT_EQ(out[3]["response"]["body"]["echo"], "p3");
  EXPECT_EQ(out[3]["response"]["request_id"], "cmpl-p3");
  EXPECT_EQ(out[3]["id"].get<std::string>().rfind("batch_req_", 0), 0u);
  EXPECT_TRUE(fx.Output("batch_a", /*errors=*/true).empty());
  auto b = fx.store->GetBatch("k", "batch_a");
  EXPECT_EQ(b->counts.completed, 12);
  EXPECT_GT(b->finalizing_at, 0);
}

TEST(BatchRunner, ALineRefusedForCapacityWaitsAndRunsAgainInsteadOfFailing) {
  Fixture fx;
  fx.AddBatch("batch_a", 3);
  std::mutex mu;
  std::map<std::string, int> tries;
  RunnerOptions o;
  o.parallel = 2;
  o.poll_ms = 10;
  o.retry_ms = 1;
  BatchRunner runner(
      fx.store.get(),
      [&](const LineRequest& r, const std::function<bool()>&) {
        std::lock_guard<std::mutex> lock(mu);
        const int n = ++tries[PromptOf(r)];
        if (PromptOf(r) == "p1" && n <= 2) {
          LineResult busy;
          busy.status_code = n == 1 ? 503 : 429;
          busy.body = R"({"error":{"message":"displaced"}})";
          return busy;
        }
        if (PromptOf(r) == "p2") {
          LineResult bad;
          bad.status_code = 400;
          bad.body = R"({"error":{"message":"max_tokens must be positive","param":"max_tokens"}})";
          return bad;
        }
        return Ok(r);
      },
      o, &fx.clock);
  runner.Start();
  // Backoff is measured on the injected clock: move it along.
  ASSERT_TRUE(Eventually([&] {
    fx.clock.Advance(1s);
    runner.Wake();
    return fx.StatusOf("batch_a") == BatchStatus::kCompleted;
  }));
  runner.Stop();
  EXPECT_EQ(tries["p1"], 3);
  EXPECT_EQ(tries["p2"], 1);  // a 400 is that line's answer: not retried
  const auto out = fx.Output("batch_a");
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1]["custom_id"], "c1");
  const auto err = fx.Output("batch_a", true);
  ASSERT_EQ(err.size(), 1u);
  EXPECT_EQ(err[0]["custom_id"], "c2");
  EXPECT_EQ(err[0]["response"]["status_code"], 400);
  EXPECT_EQ(err[0]["response"]["body"]["error"]["param"], "max_tokens");
}

TEST(BatchRunner, CancellingCutsTheRunningLinesAndEndsTheBatchCancelled) {
  Fixture fx;
  fx.AddBatch("batch_a", 5);
  std::atomic<int> started{0};
  std::atomic<int> saw_cancel{0};
  RunnerOptions o;
  o.parallel = 2;
  o.poll_ms = 10;
  BatchRunner runner(
      fx.store.get(),
      [&](const LineRequest& r, const std::function<bool()>& cancelled) {
        if (PromptOf(r) == "p0") return Ok(r);
        ++started;
        while (!cancelled()) std::this_thread::sleep_for(1ms);
        ++saw_cancel;
        LineResult cut;
        cut.status_code = 503;  // what a cut request answers
        return cut;
      },
      o, &fx.clock);
  runner.Start();
  ASSERT_TRUE(Eventually([&] { return started.load() == 2; }));
  ASSERT_TRUE(fx.store->Cancel("k", "batch_a", fx.clock.UnixSeconds()).ok());
  runner.Wake();
  ASSERT_TRUE(Eventually([&] { return fx.StatusOf("batch_a") == BatchStatus::kCancelled; }));
  runner.Stop();
  EXPECT_EQ(saw_cancel.load(), 2);
  auto b = fx.store->GetBatch("k", "batch_a");
  EXPECT_EQ(b->counts.completed, 1);
  EXPECT_EQ(b->counts.failed, 0);  // lines never run are left out of a cancelled batch
  EXPECT_GT(b->cancelled_at, 0);
  EXPECT_EQ(fx.Output("batch_a").size(), 1u);
}

TEST(BatchRunner, PastItsWindowABatchExpiresAndItsUnrunLinesSaySo) {
  Fixture fx;
  fx.AddBatch("batch_a", 4, /*expires_at=*/fx.clock.UnixSeconds() + 60);
  std::atomic<int> calls{0};
  RunnerOptions o;
  o.parallel = 1;
  o.poll_ms = 10;
  BatchRunner runner(
      fx.store.get(),
      [&](const LineRequest& r, const std::function<bool()>& cancelled) {
        if (++calls == 1) return Ok(r);
        while (!cancelled()) std::this_thread::sleep_for(1ms);
        return LineResult{};
      },
      o, &fx.clock);
  runner.Start();
  ASSERT_TRUE(Eventually([&] { return calls.load() == 2; }));
  fx.clock.Advance(61s);
  runner.Wake();
  ASSERT_TRUE(Eventually([&] { return fx.StatusOf("batch_a") == BatchStatus::kExpired; }));
  runner.Stop();
  EXPECT_EQ(fx.Output("batch_a").size(), 1u);
  const auto err = fx.Output("batch_a", true);
  ASSERT_EQ(err.size(), 3u);
  for (const auto& e : err) {
    EXPECT_EQ(e["error"]["code"], "batch_expired");
    EXPECT_TRUE(e["response"].is_null());
  }
  EXPECT_EQ(fx.store->GetBatch("k", "batch_a")->counts.failed, 3);
}

TEST(BatchRunner, AfterAStopANewRunnerFinishesTheBatchWithoutRunningAFinishedLineAgain) {
  Fixture fx;
  fx.AddBatch("batch_a", 10);
  std::mutex mu;
  std::map<std::string, int> runs;
  RunnerOptions o;
  o.parallel = 6;  // room for the five hanging lines and one more
  o.poll_ms = 10;
  std::atomic<bool> hold{true};
  auto exec = [&](const LineRequest& r, const std::function<bool()>& cancelled) {
    {
      std::lock_guard<std::mutex> lock(mu);
      ++runs[PromptOf(r)];
    }
    const int n = std::stoi(PromptOf(r).substr(1));
    // Half the lines hang until the runner stops (a process dying mid-line).
    if (hold && n % 2 == 1) {
      while (!cancelled()) std::this_thread::sleep_for(1ms);
      return LineResult{};
    }
    return Ok(r);
  };
  {
    BatchRunner first(fx.store.get(), exec, o, &fx.clock);
    first.Start();
    ASSERT_TRUE(
        Eventually([&] { return fx.store->GetBatch("k", "batch_a")->counts.completed == 5; }));
    first.Stop();
  }
  EXPECT_EQ(fx.StatusOf("batch_a"), BatchStatus::kInProgress);
  hold = false;
  fx.store.reset();  // as after a restart: the lock is released, the file opened again
  fx.store = std::move(BatchStore::Open(fx.path)).value();
  BatchRunner second(fx.store.get(), exec, o, &fx.clock);
  second.Start();
  ASSERT_TRUE(Eventually([&] { return fx.StatusOf("batch_a") == BatchStatus::kCompleted; }));
  second.Stop();
  for (int i = 0; i < 10; i += 2) EXPECT_EQ(runs["p" + std::to_string(i)], 1) << i;
  const auto out = fx.Output("batch_a");
  ASSERT_EQ(out.size(), 10u);
  std::set<std::string> ids;
  for (const auto& line : out) ids.insert(line["custom_id"].get<std::string>());
  EXPECT_EQ(ids.size(), 10u);
}

}  // namespace
}  // namespace outpost::batch

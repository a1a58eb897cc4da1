// BatchRunner — runs the lines of in-progress batches in the background, at
// the lowest admission class, and finalizes each batch when it is done,
// expired or cancelled.
//
// Lines are handed to an Executor (the app wires it to the HTTP API's own
// handlers, so a line is validated, routed, audited and answered exactly as
// the same request over HTTP; the executor marks it batch class). At most
// `parallel` lines run at once over all batches; a batch's first line runs
// alone, so that the prompt prefix its lines share is prefilled once and the
// rest find it in the prefix cache; then lines go in prompt order.
//
// A line answered 429 or 503 (interactive load displaced it, the queue is
// full, the model is loading) is not failed: it waits (retry_ms, doubling to
// 30 s) and runs again. Any other answer is recorded — durably, before the
// line counts as done — so a crash or restart loses no finished line and
// runs none twice. Cancelling a batch, or reaching its expiry, cancels its
// running lines (their sequences are freed); Stop() does the same for all
// (they run again after a restart). Once a minute it also deletes the files
// past their expires_at.
//
// Threads: one coordinator and `parallel` workers, started by Start(),
// joined by Stop(). Public methods are thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "outpost/batch/batch_store.h"
#include "outpost/util/clock.h"
#include "outpost/util/random.h"
#include "outpost/util/thread_annotations.h"

namespace outpost::batch {

struct LineRequest {
  std::string url;           // the endpoint path
  std::string body;          // JSON text
  std::string headers_json;  // the batch's forwarded headers, a JSON object
};

// Runs one line to its answer. `cancelled` turns true when the answer is no
// longer wanted; the executor should then stop as soon as it can.
using Executor =
    std::function<LineResult(const LineRequest& line, const std::function<bool()>& cancelled)>;

struct RunnerOptions {
  int parallel = 4;         // lines running at once, over all batches
  int64_t retry_ms = 1000;  // first wait of a line refused for capacity
  int64_t poll_ms = 1000;   // expiry checks when nothing else wakes the runner
  int64_t max_retry_ms = 30'000;
};

class BatchRunner {
 public:
  BatchRunner(BatchStore* store, Executor executor, RunnerOptions options,
              const util::Clock* clock = &util::RealClock(),
              util::Random* random = &util::RealRandom());
  ~BatchRunner();
  BatchRunner(const BatchRunner&) = delete;
  BatchRunner& operator=(const BatchRunner&) = delete;

  void Start();
  void Stop();
  // A batch was created or cancelled: look again now.
  void Wake();

  // Lines this process has finished for the batch per second since it began
  // running them (0 until one finished).
  double LinesPerSecond(const std::string& batch_id) const;
  // Lines running now, over all batches.
  int64_t Running() const;
  // Since start: lines recorded answered 200, recorded with an error, and
  // refused for capacity (to run again).
  struct Counts {
    int64_t ok = 0, failed = 0, refused = 0;
  };
  Counts counts() const {
    return {ok_.load(std::memory_order_relaxed), failed_.load(std::memory_order_relaxed),
            refused_.load(std::memory_order_relaxed)};
  }

 private:
  struct BatchState {
    std::set<int64_t> running;
    std::map<int64_t, util::Clock::TimePoint> waiting;  // refused lines: when to try again
    std::map<int64_t, int> attempts;
    std::shared_ptr<std::atomic<bool>> cancel = std::make_shared<std::atomic<bool>>(false);
    util::Clock::TimePoint started{};
    int64_t finished = 0;
  };
  struct Job {
    std::string batch_id;
    BatchLine line;
    std::string headers_json;
    std::shared_ptr<std::atomic<bool>> cancel;
  };

  void Coordinate();
  void Work();
  // One pass over the unfinished batches: queue lines, finalize what ended.
  void Pass(std::unique_lock<std::mutex>& lock) OUTPOST_REQUIRES(mu_);
  void FinalizeUnlocked(std::unique_lock<std::mutex>& lock, const BatchObject& b,
                        BatchStatus status) OUTPOST_REQUIRES(mu_);
  void Finish(const Job& job, const LineResult& r);

  BatchStore* const store_;
  const Executor executor_;
  const RunnerOptions options_;
  const util::Clock* const clock_;
  util::Random* const random_;

  mutable std::mutex mu_;
  std::condition_variable wake_;        // the coordinator
  std::condition_variable jobs_ready_;  // the workers
  bool woken_ OUTPOST_GUARDED_BY(mu_) = false;
  bool stop_ OUTPOST_GUARDED_BY(mu_) = false;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> ok_{0}, failed_{0}, refused_{0};
  std::deque<Job> jobs_ OUTPOST_GUARDED_BY(mu_);
  int64_t busy_ OUTPOST_GUARDED_BY(mu_) = 0;  // jobs queued or running
  std::map<std::string, BatchState> batches_ OUTPOST_GUARDED_BY(mu_);
  std::thread coordinator_;
  std::vector<std::thread> workers_;
};

}  // namespace outpost::batch

// BackgroundRuns — the Responses API's background mode (`background: true`):
// each such response runs on a thread of its own instead of on the
// connection that asked for it, so its client may hang up, poll it (GET
// /v1/responses/{id}), stream it again from any event (`starting_after`) or
// cancel it — what a site whose link drops needs from a long answer.
//
// A run records its event stream as it is made (SSE bytes, split into
// events at their blank lines; event i is the stream's i-th, which is its
// sequence_number for Outpost's own events); readers tail it. A finished run
// is kept `keep_ms` for late readers, then forgotten (its Response stays in
// the response store). At most `max_running` run at once.
//
// Thread-safety: every method of both classes is safe from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "outpost/api/sse.h"
#include "outpost/util/clock.h"
#include "outpost/util/status.h"
#include "outpost/util/thread_annotations.h"

namespace outpost::api {

class BackgroundRun {
 public:
  BackgroundRun(std::string id, std::string owner) : id_(std::move(id)), owner_(std::move(owner)) {}

  const std::string& id() const { return id_; }
  const std::string& owner() const { return owner_; }

  // The run's stream, in chunks cut anywhere; each whole event becomes
  // readable at once.
  void Write(std::string_view data);
  // The events after index `after` (-1: from the first), waiting up to
  // `wait_ms` for one if there is none yet. *ended: the run is over and
  // every event has been given.
  std::vector<std::string> EventsAfter(int64_t after, int64_t wait_ms, bool* ended);
  // How many whole events there are.
  int64_t events() const;

  // Asks the run to stop; the work sees cancelled(). `shutdown`: the
  // server is stopping, not the client asking (shut_down()).
  void Cancel(bool shutdown = false);
  bool cancelled() const { return cancelled_.load(); }
  bool shut_down() const { return shut_down_.load(); }
  // The model has begun it (its first token): a stop lets it finish within
  // the drain; one not begun is cut at once (and runs after the restart).
  void MarkStarted() { started_ = true; }
  bool started() const { return started_.load(); }
  bool done() const;
  // Waits until the work has returned; false after `wait_ms`.
  bool WaitDone(int64_t wait_ms);

 private:
  friend class BackgroundRuns;
  void Finish(int64_t now_ms);

  const std::string id_, owner_;
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> shut_down_{false};
  std::atomic<bool> started_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> events_ OUTPOST_GUARDED_BY(mu_);
  SseEventSplitter splitter_ OUTPOST_GUARDED_BY(mu_);
  bool done_ OUTPOST_GUARDED_BY(mu_) = false;
  int64_t done_at_ms_ OUTPOST_GUARDED_BY(mu_) = 0;
};

class BackgroundRuns {
 public:
  BackgroundRuns(size_t max_running, int64_t keep_ms, const util::Clock* clock)
      : max_running_(max_running), keep_ms_(keep_ms), clock_(clock) {}
  ~BackgroundRuns() { Stop(); }

  // Runs work(run) on a thread of its own (the run's own pointer: what the
  // work hands on may outlive it). ResourceExhausted when
  // max_running are running (or after Stop()); InvalidArgument for an id
  // already kept.
  StatusOr<std::shared_ptr<BackgroundRun>> Start(
      const std::string& id, const std::string& owner,
      std::function<void(const std::shared_ptr<BackgroundRun>&)> work);
  // The owner's run `id`, running or finished and still kept; null if none.
  std::shared_ptr<BackgroundRun> Find(const std::string& owner, const std::string& id);
  size_t Running() const;
  // Of those, the ones the model has begun (BackgroundRun::started()).
  size_t Started() const;
  // Cancels every run and waits for all; Start refuses from then on.
  void Stop();

 private:
  struct Entry {
    std::shared_ptr<BackgroundRun> run;
    std::thread thread;
  };
  size_t RunningLocked() const OUTPOST_REQUIRES(mu_);
  // Joins the threads of finished runs and forgets those past keep_ms.
  void ReapLocked() OUTPOST_REQUIRES(mu_);

  const size_t max_running_;
  const int64_t keep_ms_;
  const util::Clock* const clock_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> runs_ OUTPOST_GUARDED_BY(mu_);
  bool stopped_ OUTPOST_GUARDED_BY(mu_) = false;
};

}  // namespace outpost::api

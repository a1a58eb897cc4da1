#include "outpost/api/background_runs.h"

#include <chrono>

namespace outpost::api {

void BackgroundRun::Write(std::string_view data) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> whole = splitter_.Feed(data);
  for (std::string& e : whole) events_.push_back(std::move(e));
  if (!whole.empty()) cv_.notify_all();
}

std::vector<std::string> BackgroundRun::EventsAfter(int64_t after, int64_t wait_ms, bool* ended) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto from = static_cast<size_t>(after + 1);
  cv_.wait_for(lock, std::chrono::milliseconds(wait_ms),
               [&] { return done_ || events_.size() > from; });
  std::vector<std::string> out;
  for (size_t i = from; i < events_.size(); ++i) out.push_back(events_[i]);
  *ended = done_;
  return out;
}

int64_t BackgroundRun::events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(events_.size());
}

void BackgroundRun::Cancel(bool shutdown) {
  if (shutdown) shut_down_ = true;
  cancelled_ = true;
  std::lock_guard<std::mutex> lock(mu_);
  cv_.notify_all();
}

bool BackgroundRun::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

bool BackgroundRun::WaitDone(int64_t wait_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::milliseconds(wait_ms), [&] { return done_; });
}

void BackgroundRun::Finish(int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  // A last event without its blank line is still an event.
  if (std::string last = splitter_.Flush(); !last.empty()) events_.push_back(std::move(last));
  done_ = true;
  done_at_ms_ = now_ms;
  cv_.notify_all();
}

StatusOr<std::shared_ptr<BackgroundRun>> BackgroundRuns::Start(
    const std::string& id, const std::string& owner,
    std::function<void(const std::shared_ptr<BackgroundRun>&)> work) {
  std::lock_guard<std::mutex> lock(mu_);
  ReapLocked();
  if (stopped_) return Status::ResourceExhausted("the server is shutting down");
  const size_t running = RunningLocked();
  if (running >= max_running_) {
    return Status::ResourceExhausted("background responses: " + std::to_string(running) +
                                     " are running, the most this server runs at once; retry "
                                     "when one has finished")
        .WithRetryAfter(5);
  }
  if (runs_.count(id) > 0) return Status::InvalidArgument("a background run '" + id + "' exists");
  auto run = std::make_shared<BackgroundRun>(id, owner);
  Entry& e = runs_[id];
  e.run = run;
  const util::Clock* clock = clock_;
  e.thread = std::thread([run, clock, work = std::move(work)] {
    work(run);
    run->Finish(clock->UnixMillis());
  });
  return run;
}

std::shared_ptr<BackgroundRun> BackgroundRuns::Find(const std::string& owner,
                                                    const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  ReapLocked();
  auto it = runs_.find(id);
  if (it == runs_.end() || it->second.run->owner() != owner) return nullptr;
  return it->second.run;
}

size_t BackgroundRuns::Running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return RunningLocked();
}

size_t BackgroundRuns::Started() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t started = 0;
  for (const auto& [_, e] : runs_) started += !e.run->done() && e.run->started() ? 1 : 0;
  return started;
}

size_t BackgroundRuns::RunningLocked() const {
  size_t running = 0;
  for (const auto& [_, e] : runs_) running += e.run->done() ? 0 : 1;
  return running;
}

void BackgroundRuns::ReapLocked() {
  const int64_t now = clock_->UnixMillis();
  for (auto it = runs_.begin(); it != runs_.end();) {
    BackgroundRun& run = *it->second.run;
    bool done = false, forget = false;
    {
      std::lock_guard<std::mutex> run_lock(run.mu_);
      done = run.done_;
      forget = done && now - run.done_at_ms_ >= keep_ms_;
    }
    // Its work has returned: the thread is ending.
    if (done && it->second.thread.joinable()) it->second.thread.join();
    it = forget ? runs_.erase(it) : std::next(it);
  }
}

void BackgroundRuns::Stop() {
  std::map<std::string, Entry> runs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    for (auto& [_, e] : runs_) e.run->Cancel(/*shutdown=*/true);
    for (auto& [id, e] : runs_) {
      if (e.thread.joinable()) runs[id].thread = std::move(e.thread);
    }
  }
  for (auto& [_, e] : runs) e.thread.join();
}

}  // namespace outpost::api

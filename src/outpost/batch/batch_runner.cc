#include "outpost/batch/batch_runner.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

namespace outpost::batch {
namespace {

bool Refused(int status) {
  return status == 429 || status == 503 || status == 0;
}

}  // namespace

BatchRunner::BatchRunner(BatchStore* store, Executor executor, RunnerOptions options,
                         const util::Clock* clock, util::Random* random)
    : store_(store),
      executor_(std::move(executor)),
      options_(options),
      clock_(clock),
      random_(random) {}

BatchRunner::~BatchRunner() {
  Stop();
}

void BatchRunner::Start() {
  coordinator_ = std::thread([this] { Coordinate(); });
  for (int i = 0; i < std::max(1, options_.parallel); ++i) {
    workers_.emplace_back([this] { Work(); });
  }
}

void BatchRunner::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    stop_ = true;
    stopping_ = true;
    jobs_.clear();
  }
  wake_.notify_all();
  jobs_ready_.notify_all();
  if (coordinator_.joinable()) coordinator_.join();
  for (auto& w : workers_) w.join();
  workers_.clear();
}

void BatchRunner::Wake() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    woken_ = true;
  }
  wake_.notify_all();
}

double BatchRunner::LinesPerSecond(const std::string& batch_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = batches_.find(batch_id);
  if (it == batches_.end() || it->second.finished == 0) return 0;
  const double s = util::Seconds(clock_->Now() - it->second.started);
  return s > 0 ? static_cast<double>(it->second.finished) / s : 0;
}

int64_t BatchRunner::Running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return busy_;
}

void BatchRunner::Coordinate() {
  std::unique_lock<std::mutex> lock(mu_);
  util::Clock::TimePoint swept{};
  while (!stop_) {
    Pass(lock);
    if (stop_) break;
    if (clock_->Now() - swept >= std::chrono::minutes(1)) {
      // Files past their expires_at leave the disk even when nobody asks.
      swept = clock_->Now();
      lock.unlock();
      const int64_t gone = store_->DeleteExpiredFiles(clock_->UnixSeconds());
      if (gone > 0) spdlog::info("batch: deleted {} expired file(s)", gone);
      lock.lock();
      if (stop_) break;
    }
    wake_.wait_for(lock, std::chrono::milliseconds(options_.poll_ms),
                   [&] { return stop_ || woken_; });
    woken_ = false;
  }
}

void BatchRunner::FinalizeUnlocked(std::unique_lock<std::mutex>& lock, const BatchObject& b,
                                   BatchStatus status) {
  batches_.erase(b.id);
  BatchStore::Final f;
  f.status = status;
  f.at = clock_->UnixSeconds();
  if (status == BatchStatus::kExpired) {
    f.unrun_code = "batch_expired";
    f.unrun_message = "This request could not be executed before the completion window expired.";
  }
  f.output_file_id = util::RandomId("file-", *random_);
  f.error_file_id = util::RandomId("file-", *random_);
  lock.unlock();
  if (b.status == BatchStatus::kInProgress && status == BatchStatus::kCompleted) {
    store_->MarkFinalizing(b.id, f.at);
  }
  const Status st = store_->Finalize(b.id, f);
  if (st.ok()) {
    const auto now = store_->GetBatch(b.owner, b.id);
    const BatchObject& done = now.ok() ? *now : b;
    spdlog::info(
        "batch {} {}: {} of {} lines answered 200, {} failed; {} input tokens ({} cached), "
        "{} output tokens",
        b.id, BatchStatusName(status), done.counts.completed, done.counts.total, done.counts.failed,
        done.usage.input, done.usage.cached, done.usage.output);
  } else {
    spdlog::error("batch {}: cannot finalize: {}", b.id, st.message());
  }
  lock.lock();
}

void BatchRunner::Pass(std::unique_lock<std::mutex>& lock) {
  lock.unlock();
  const std::vector<BatchObject> unfinished = store_->Unfinished();
  lock.lock();
  const int64_t now_s = clock_->UnixSeconds();
  const auto now = clock_->Now();
  for (const BatchObject& b : unfinished) {
    if (stop_) return;
    BatchState& st = batches_[b.id];
    const bool expired =
        b.status == BatchStatus::kInProgress && b.expires_at > 0 && now_s >= b.expires_at;
    if (b.status == BatchStatus::kCancelling || expired) {
      st.cancel->store(true);
      // Lines not yet taken by a worker never start.
      jobs_.erase(std::remove_if(jobs_.begin(), jobs_.end(),
                                 [&](const Job& j) { return j.batch_id == b.id; }),
                  jobs_.end());
      // Running lines end soon (cancelled); the batch ends after them.
      if (st.running.empty()) {
        FinalizeUnlocked(lock, b, expired ? BatchStatus::kExpired : BatchStatus::kCancelled);
      }
      continue;
    }
    if (b.status == BatchStatus::kFinalizing) {
      if (st.running.empty()) FinalizeUnlocked(lock, b, BatchStatus::kCompleted);
      continue;
    }
    // In progress.
    const int64_t free = options_.parallel - busy_;
    std::set<int64_t> skip = st.running;
    bool waiting = false;
    for (auto it = st.waiting.begin(); it != st.waiting.end();) {
      if (it->second > now) {
        skip.insert(it->first);
        waiting = true;
        ++it;
      } else {
        it = st.waiting.erase(it);
      }
    }
    // The first line alone: its prompt prefix is cached for the others.
    const bool warming = b.counts.completed + b.counts.failed == 0 && st.finished == 0;
    if (warming && !st.running.empty()) continue;
    const int64_t want = warming ? std::min<int64_t>(1, free) : free;
    lock.unlock();
    std::vector<BatchLine> lines =
        want > 0 ? store_->PendingLines(b.id, want, skip) : std::vector<BatchLine>();
    const bool any_pending =
        want > 0 ? !lines.empty() : !store_->PendingLines(b.id, 1, skip).empty();
    lock.lock();
    if (stop_) return;
    if (!any_pending && st.running.empty() && !waiting) {
      FinalizeUnlocked(lock, b, BatchStatus::kCompleted);
      continue;
    }
    if (st.started == util::Clock::TimePoint{}) st.started = now;
    for (BatchLine& line : lines) {
      st.running.insert(line.index);
      jobs_.push_back({b.id, std::move(line), b.headers_json, st.cancel});
      ++busy_;
    }
  }
  if (!jobs_.empty()) jobs_ready_.notify_all();
}

void BatchRunner::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    jobs_ready_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
    if (stop_) return;
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    const auto cancel = job.cancel;
    LineResult r = executor_({job.line.url, job.line.body, job.headers_json},
                             [cancel, this] { return cancel->load() || stopping_.load(); });
    Finish(job, r);
    lock.lock();
  }
}

void BatchRunner::Finish(const Job& job, const LineResult& r) {
  const bool cancelled = job.cancel->load() || stopping_.load();
  // An answer is kept unless the line was refused for capacity or cut short
  // by a cancel (then it runs again, or is left unrun).
  const bool keep = r.status_code == 200 || (!cancelled && !Refused(r.status_code));
  bool recorded = false;
  if (keep) {
    const Status st =
        store_->RecordLine(job.batch_id, job.line.index, r, util::RandomId("batch_req_", *random_));
    recorded = st.ok();
    if (recorded) ++(r.status_code == 200 ? ok_ : failed_);
    if (!st.ok()) spdlog::error("batch {}: cannot record a line: {}", job.batch_id, st.message());
  }
  std::lock_guard<std::mutex> lock(mu_);
  --busy_;
  auto it = batches_.find(job.batch_id);
  if (it != batches_.end()) {
    BatchState& st = it->second;
    st.running.erase(job.line.index);
    if (recorded) {
      ++st.finished;
      st.attempts.erase(job.line.index);
    } else if (!cancelled) {
      ++refused_;
      const int n = ++st.attempts[job.line.index];
      const int64_t ms = std::min(options_.max_retry_ms, options_.retry_ms << std::min(n - 1, 16));
      st.waiting[job.line.index] = clock_->Now() + std::chrono::milliseconds(ms);
    }
  }
  woken_ = true;
  wake_.notify_all();
}

}  // namespace outpost::batch

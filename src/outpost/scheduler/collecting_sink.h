// CollectingSink — a GenerationSink that collects choice 0's whole answer
// for a caller that waits for it instead of streaming it: the model warm-up
// (models/model_lifecycle.cc) and the local half of a confidence cascade
// (router/dispatcher_impl.cc).
//
// Thread-safety: OnText/OnDone come from the engine thread, Wait/text/
// result from the waiting one; one mutex guards the state.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <utility>

#include "outpost/scheduler/request.h"
#include "outpost/util/thread_annotations.h"

namespace outpost::scheduler {

class CollectingSink final : public GenerationSink {
 public:
  // `cancelled` (optional, any thread, cheap): true once nobody wants the
  // answer (a cascade's client that has gone).
  explicit CollectingSink(std::function<bool()> cancelled = nullptr)
      : cancelled_(std::move(cancelled)) {}

  void OnText(int choice, std::string text) override {
    if (choice != 0) return;  // callers ask for one choice
    std::lock_guard<std::mutex> lock(mu_);
    text_ += text;
  }
  void OnDone(GenerationResult r) override {
    std::lock_guard<std::mutex> lock(mu_);
    result_ = std::move(r);
    done_ = true;
    cv_.notify_all();
  }
  bool Cancelled() override { return cancelled_ != nullptr && cancelled_(); }

  // Blocks until OnDone (the scheduler always sends it once Submit took the
  // request). False when `timeout` passed first.
  bool Wait(std::chrono::milliseconds timeout = std::chrono::milliseconds::max()) {
    std::unique_lock<std::mutex> lock(mu_);
    if (timeout == std::chrono::milliseconds::max()) {
      cv_.wait(lock, [&] { return done_; });
      return true;
    }
    return cv_.wait_for(lock, timeout, [&] { return done_; });
  }
  std::string text() const {
    std::lock_guard<std::mutex> lock(mu_);
    return text_;
  }
  GenerationResult result() const {
    std::lock_guard<std::mutex> lock(mu_);
    return result_;
  }

 private:
  const std::function<bool()> cancelled_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string text_ OUTPOST_GUARDED_BY(mu_);
  GenerationResult result_ OUTPOST_GUARDED_BY(mu_);
  bool done_ OUTPOST_GUARDED_BY(mu_) = false;
};

}  // namespace outpost::scheduler

// GenerationRequest and the channel its results travel back on.
//
// An HTTP worker builds a GenerationRequest (prompt already tokenized), hands
// it to Scheduler::Submit(), and reads GenerationEvents from the returned
// RequestHandle until one has `done` set. The engine thread pushes events;
// Cancel() (client gone) is seen by the engine thread at the next step, which
// then frees the sequence's KV. Internally synchronised.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "outpost/engine/types.h"
#include "outpost/util/status.h"

namespace outpost::scheduler {

// Interactive requests are admitted before batch requests.
enum class Priority { kInteractive = 0, kBatch = 1 };

enum class FinishReason { kNone, kStop, kLength, kCancelled, kError };
const char* FinishReasonName(FinishReason r);  // "stop", "length", ...

struct GenerationRequest {
  std::string id;
  std::vector<engine::Token> prompt;
  engine::SamplingParams sampling;
  int32_t max_tokens = -1;        // -1: until the context is full
  std::vector<std::string> stop;  // stop strings (not included in output)
  Priority priority = Priority::kInteractive;
  // Compute each sampled token's log-probability under the model's raw
  // distribution (costs one pass over the vocabulary per token).
  bool want_logprobs = false;
};

struct Usage {
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
  double sum_logprob = 0;  // with want_logprobs: sum over generated tokens
};

// One step of output for one request. Text is whole UTF-8 characters.
struct GenerationEvent {
  std::string text;
  bool done = false;
  FinishReason finish = FinishReason::kNone;  // set when done
  Status error;                               // non-OK when finish == kError
  Usage usage;                                // final when done
  int32_t retry_after_s = 0;                  // with ResourceExhausted errors
};

class RequestHandle {
 public:
  // Engine side.
  void Push(GenerationEvent ev);
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }

  // HTTP side. Pop waits up to `timeout` and returns false if nothing came.
  bool Pop(GenerationEvent* out, std::chrono::milliseconds timeout);
  void Cancel() { cancelled_.store(true, std::memory_order_relaxed); }

  // Timestamps for metrics (steady clock), written by the engine thread before
  // the corresponding event is pushed.
  std::chrono::steady_clock::time_point submitted_at;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<GenerationEvent> events_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace outpost::scheduler

// Scheduler — admission and continuous batching for one loaded model.
//
// Owns the engine thread, the only thread that touches the engine::Context.
// HTTP workers call Submit() (internally synchronised) and read the returned
// RequestHandle. Every engine step builds ONE llama_decode batch holding
//   * one token for every sequence that is decoding, then
//   * a bounded chunk of pending prompt tokens (prefill_chunk; the whole batch
//     when nobody is decoding),
// so a long prompt delays everyone else's next token by at most one chunk.
//
// Admission: `n_seq` slots (from the capacity plan); past that a bounded FIFO
// queue per priority (interactive before batch) with a maximum wait; past that
// Submit() fails with ResourceExhausted and a Retry-After derived from the
// queue length, the mean completion length and the measured decode rate.
//
// Slot states (one per sequence id):
//
//     kIdle ──admit──▶ kPrefill ──last prompt token decoded──▶ kDecode
//       ▲                  │                                     │
//       └──── finished / cancelled / failed (KV freed at once) ◀─┘
//
// Invariants: a slot in kIdle holds no KV cells; a sequence's KV never grows
// past ctx_per_session tokens; only the engine thread changes slot state.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "outpost/engine/context.h"
#include "outpost/engine/model.h"
#include "outpost/engine/sampler.h"
#include "outpost/scheduler/request.h"
#include "outpost/scheduler/stop_matcher.h"
#include "outpost/telemetry/metrics.h"

namespace outpost::scheduler {

struct SchedulerOptions {
  int32_t n_seq = 1;                  // concurrent sessions (= context sequences)
  int32_t ctx_per_session = 4096;     // tokens per session (prompt + completion)
  int32_t n_batch = 512;              // max tokens in one decode step
  int32_t prefill_chunk = 256;        // max prompt tokens per step while others decode
  int32_t max_queue = 16;             // queued requests beyond the sessions; 0 = no queue
  int64_t max_queue_wait_ms = 30000;  // a queued request older than this gets 503
  uint64_t kv_bytes_per_token = 0;    // for the kv_bytes_used gauge
};

// Point-in-time view for /ready.
struct SchedulerSnapshot {
  int32_t max_sessions = 0;
  int32_t active = 0;
  int32_t queued = 0;
  int32_t max_queue = 0;
  double decode_tokens_per_second = 0;
};

class Scheduler {
 public:
  // Shares ownership of the model so the context is always freed first.
  Scheduler(std::shared_ptr<const engine::Model> model, std::unique_ptr<engine::Context> ctx,
            SchedulerOptions options, telemetry::Metrics* metrics);
  ~Scheduler();  // Stop()s
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Starts the engine thread. Call once.
  void Start();
  // Finishes every request with Unavailable and joins the engine thread.
  void Stop();

  // Queues a request. Errors: InvalidArgument (prompt empty or longer than the
  // session context, naming both numbers), ResourceExhausted (queue full;
  // *retry_after_s set), Unavailable (stopping). Thread-safe.
  StatusOr<std::shared_ptr<RequestHandle>> Submit(GenerationRequest req, int32_t* retry_after_s);

  SchedulerSnapshot Snapshot() const;  // thread-safe
  // Expected wait for a new request to get a session, from the queue, the mean
  // completion length and the measured decode rate. Thread-safe.
  int64_t EstimatedWaitMs() const;
  const SchedulerOptions& options() const { return options_; }
  const engine::Model& model() const { return *model_ptr_; }

 private:
  enum class SlotState { kIdle, kPrefill, kDecode };

  struct Queued {
    GenerationRequest req;
    std::shared_ptr<RequestHandle> handle;
    std::chrono::steady_clock::time_point enqueued;
  };

  struct Slot {
    engine::SeqId seq = 0;
    SlotState state = SlotState::kIdle;
    GenerationRequest req;
    std::shared_ptr<RequestHandle> handle;
    std::unique_ptr<engine::Sampler> sampler;
    std::optional<StopMatcher> stop;
    size_t n_prompt_done = 0;  // prompt tokens already in the KV cache
    int32_t n_past = 0;        // tokens in the KV cache
    int32_t n_generated = 0;
    double sum_logprob = 0;
    engine::Token last_token = 0;
    int32_t i_batch = -1;      // logits index in the current batch, or -1
    std::string utf8_pending;  // bytes of an incomplete UTF-8 character
    std::chrono::steady_clock::time_point started, last_token_at;
  };

  void Loop();
  // Engine thread: moves queued requests into idle slots, expires old ones.
  // Returns false when stopping. Blocks while there is nothing to do.
  bool AdmitAndWait();
  void BuildBatch(int32_t* n_decode, int32_t* n_prefill);
  void HandleSampled(Slot& s, engine::Token tok, int32_t idx);
  void Finish(Slot& s, FinishReason why, Status error = Status::Ok());
  void FailBatch(const Status& st);
  int32_t RetryAfterLocked() const;  // REQUIRES: mu_ held
  void UpdateRate(int32_t n_sampled, std::chrono::steady_clock::duration step);

  // Const after construction.
  const std::shared_ptr<const engine::Model> model_ptr_;
  const engine::Model& model_;
  std::unique_ptr<engine::Context> ctx_;
  const SchedulerOptions options_;
  telemetry::Metrics* const metrics_;

  // Guarded by mu_.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Queued> queue_[2];  // by Priority
  bool stopping_ = false;
  int32_t active_ = 0;
  double mean_completion_tokens_ = 64;  // EMA over finished requests
  double decode_tps_ = 0;               // EMA, aggregate over all sequences

  // Engine thread only.
  std::vector<Slot> slots_;
  std::chrono::steady_clock::duration rate_window_busy_{};
  int64_t rate_window_tokens_ = 0;
  std::thread thread_;
};

}  // namespace outpost::scheduler

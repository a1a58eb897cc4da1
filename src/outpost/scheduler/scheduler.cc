#include "outpost/scheduler/scheduler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "outpost/util/utf8.h"

namespace outpost::scheduler {

using Clock = std::chrono::steady_clock;

namespace {
double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}
}  // namespace

Scheduler::Scheduler(std::shared_ptr<const engine::Model> model,
                     std::unique_ptr<engine::Context> ctx, SchedulerOptions options,
                     telemetry::Metrics* metrics)
    : model_ptr_(std::move(model)),
      model_(*model_ptr_),
      ctx_(std::move(ctx)),
      options_(options),
      metrics_(metrics) {
  slots_.resize(static_cast<size_t>(options_.n_seq));
  for (size_t i = 0; i < slots_.size(); ++i) slots_[i].seq = static_cast<engine::SeqId>(i);
  metrics_->max_sessions = options_.n_seq;
  metrics_->kv_bytes_limit = ctx_->KvBytesAllocated();
}

Scheduler::~Scheduler() {
  Stop();
}

void Scheduler::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void Scheduler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

StatusOr<std::shared_ptr<RequestHandle>> Scheduler::Submit(GenerationRequest req,
                                                           int32_t* retry_after_s) {
  const auto n_prompt = static_cast<int32_t>(req.prompt.size());
  if (n_prompt == 0) return Status::InvalidArgument("the prompt is empty", "messages");
  if (n_prompt >= options_.ctx_per_session) {
    return Status::InvalidArgument("the prompt has " + std::to_string(n_prompt) +
                                       " tokens but the context per session is " +
                                       std::to_string(options_.ctx_per_session) +
                                       " tokens (at least one must remain for the answer)",
                                   "messages");
  }
  if (req.max_tokens > 0 && n_prompt + req.max_tokens > options_.ctx_per_session) {
    return Status::InvalidArgument(
        "the context per session is " + std::to_string(options_.ctx_per_session) + " tokens, but " +
            std::to_string(n_prompt + req.max_tokens) + " were requested (" +
            std::to_string(n_prompt) + " in the prompt, " + std::to_string(req.max_tokens) +
            " for the completion); lower max_tokens or shorten the prompt",
        "max_tokens");
  }
  auto handle = std::make_shared<RequestHandle>();
  handle->submitted_at = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return Status::Unavailable("the server is shutting down");
    // Requests in the queue that a free slot will take at the next step are not
    // waiting; only those beyond the sessions count against max_queue.
    const auto in_system = active_ + static_cast<int32_t>(queue_[0].size() + queue_[1].size());
    if (in_system >= options_.n_seq + options_.max_queue) {
      *retry_after_s = RetryAfterLocked();
      metrics_->rejected_total++;
      return Status::ResourceExhausted(
          "over capacity: all " + std::to_string(options_.n_seq) +
          " sessions are busy and the queue holds " + std::to_string(in_system - options_.n_seq) +
          " of " + std::to_string(options_.max_queue) + " requests; retry after " +
          std::to_string(*retry_after_s) + " s");
    }
    const int p = req.priority == Priority::kBatch ? 1 : 0;
    queue_[p].push_back(Queued{std::move(req), handle, handle->submitted_at});
    metrics_->queue_depth = static_cast<int64_t>(queue_[0].size() + queue_[1].size());
  }
  cv_.notify_one();
  return handle;
}

SchedulerSnapshot Scheduler::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  SchedulerSnapshot s;
  s.max_sessions = options_.n_seq;
  s.active = active_;
  s.queued = static_cast<int32_t>(queue_[0].size() + queue_[1].size());
  s.max_queue = options_.max_queue;
  s.decode_tokens_per_second = decode_tps_;
  return s;
}

int64_t Scheduler::EstimatedWaitMs() const {
  std::lock_guard<std::mutex> lock(mu_);
  const double queued = static_cast<double>(queue_[0].size() + queue_[1].size());
  const double rate = decode_tps_ > 0.5 ? decode_tps_ : 10.0 * options_.n_seq;
  return static_cast<int64_t>((queued + 1.0) * mean_completion_tokens_ / rate * 1000.0);
}

int32_t Scheduler::RetryAfterLocked() const {
  // Time until a session frees for one more request: everyone queued ahead plus
  // this one, each needing a mean completion, at the measured aggregate decode
  // rate. Before any measurement, assume 10 tokens/s per session.
  const double queued = static_cast<double>(queue_[0].size() + queue_[1].size());
  const double rate = decode_tps_ > 0.5 ? decode_tps_ : 10.0 * options_.n_seq;
  const double wait = (queued + 1.0) * mean_completion_tokens_ / rate;
  return static_cast<int32_t>(std::clamp(std::ceil(wait), 1.0, 3600.0));
}

bool Scheduler::AdmitAndWait() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (stopping_) return false;
    const auto now = Clock::now();
    // Expire requests that waited too long.
    for (auto& q : queue_) {
      while (!q.empty() &&
             now - q.front().enqueued > std::chrono::milliseconds(options_.max_queue_wait_ms)) {
        GenerationEvent ev;
        ev.done = true;
        ev.finish = FinishReason::kError;
        ev.retry_after_s = RetryAfterLocked();
        ev.error = Status::ResourceExhausted(
            "over capacity: waited " + std::to_string(options_.max_queue_wait_ms) +
            " ms in the queue (max_queue_wait) without a free session; retry after " +
            std::to_string(ev.retry_after_s) + " s");
        metrics_->rejected_total++;
        q.front().handle->Push(std::move(ev));
        q.pop_front();
      }
    }
    // Admit into idle slots, interactive first. Cancelled requests are dropped.
    for (auto& slot : slots_) {
      if (slot.state != SlotState::kIdle) continue;
      std::deque<Queued>* from = nullptr;
      for (auto& q : queue_) {
        while (!q.empty() && q.front().handle->cancelled()) q.pop_front();
        if (!q.empty()) {
          from = &q;
          break;
        }
      }
      if (from == nullptr) break;
      slot.req = std::move(from->front().req);
      slot.handle = std::move(from->front().handle);
      from->pop_front();
      slot.state = SlotState::kPrefill;
      slot.sampler = std::make_unique<engine::Sampler>(model_, slot.req.sampling);
      std::vector<std::string> stops = slot.req.stop;
      slot.stop.emplace(std::move(stops));
      slot.n_prompt_done = 0;
      slot.n_past = 0;
      slot.n_generated = 0;
      slot.sum_logprob = 0;
      slot.i_batch = -1;
      slot.utf8_pending.clear();
      slot.started = now;
      ++active_;
      metrics_->prompt_tokens_total += slot.req.prompt.size();
    }
    metrics_->queue_depth = static_cast<int64_t>(queue_[0].size() + queue_[1].size());
    metrics_->active_sequences = active_;
    if (active_ > 0) return true;
    // Idle: sleep until work arrives (or the oldest queued request would expire).
    cv_.wait_for(lock, std::chrono::milliseconds(500));
  }
}

void Scheduler::BuildBatch(int32_t* n_decode, int32_t* n_prefill) {
  ctx_->ClearBatch();
  *n_decode = 0;
  *n_prefill = 0;
  for (auto& s : slots_) {
    s.i_batch = -1;
    if (s.state != SlotState::kDecode) continue;
    s.i_batch = ctx_->Add(s.last_token, s.n_past, s.seq, true);
    ++s.n_past;
    ++*n_decode;
  }
  // Prefill chunk: bounded while others decode, the whole batch otherwise.
  int32_t budget = options_.n_batch - *n_decode;
  if (*n_decode > 0) budget = std::min(budget, options_.prefill_chunk);
  for (auto& s : slots_) {
    if (budget <= 0) break;
    if (s.state != SlotState::kPrefill) continue;
    const size_t remaining = s.req.prompt.size() - s.n_prompt_done;
    const auto take =
        static_cast<int32_t>(std::min<size_t>(remaining, static_cast<size_t>(budget)));
    for (int32_t k = 0; k < take; ++k) {
      const bool last = s.n_prompt_done + 1 == s.req.prompt.size();
      const int32_t idx = ctx_->Add(s.req.prompt[s.n_prompt_done], s.n_past, s.seq, last);
      if (last) s.i_batch = idx;
      ++s.n_prompt_done;
      ++s.n_past;
    }
    budget -= take;
    *n_prefill += take;
  }
}

void Scheduler::Loop() {
  spdlog::info("engine thread started: {} sessions x {} tokens, batch {}, prefill chunk {}",
               options_.n_seq, options_.ctx_per_session, options_.n_batch, options_.prefill_chunk);
  while (AdmitAndWait()) {
    // Cancelled requests (client went away) free their sequence before decoding.
    for (auto& s : slots_) {
      if (s.state != SlotState::kIdle && s.handle->cancelled()) Finish(s, FinishReason::kCancelled);
    }
    int32_t n_decode = 0, n_prefill = 0;
    BuildBatch(&n_decode, &n_prefill);
    if (ctx_->BatchSize() == 0) continue;

    const auto step_start = Clock::now();
    const Status st = ctx_->Decode();
    if (!st.ok()) {
      spdlog::error("decode of {} tokens failed: {}", ctx_->BatchSize(), st.ToString());
      FailBatch(st);
      continue;
    }
    int32_t n_sampled = 0;
    for (auto& s : slots_) {
      if (s.i_batch < 0) continue;
      const engine::Token tok = s.sampler->Sample(*ctx_, s.i_batch);
      s.state = SlotState::kDecode;
      HandleSampled(s, tok, s.i_batch);
      ++n_sampled;
    }
    UpdateRate(n_sampled, Clock::now() - step_start);
    spdlog::trace("step: {} decode + {} prefill tokens, {} sampled, {:.1f} ms", n_decode, n_prefill,
                  n_sampled, Seconds(Clock::now() - step_start) * 1000);
    uint64_t live_tokens = 0;
    for (const auto& s : slots_) live_tokens += static_cast<uint64_t>(s.n_past);
    metrics_->kv_bytes_used = live_tokens * options_.kv_bytes_per_token;
  }
  // Stopping: finish everything still running or queued.
  for (auto& s : slots_) {
    if (s.state != SlotState::kIdle)
      Finish(s, FinishReason::kError, Status::Unavailable("the server is shutting down"));
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& q : queue_) {
    for (auto& item : q) {
      GenerationEvent ev;
      ev.done = true;
      ev.finish = FinishReason::kError;
      ev.error = Status::Unavailable("the server is shutting down");
      item.handle->Push(std::move(ev));
    }
    q.clear();
  }
}

void Scheduler::HandleSampled(Slot& s, engine::Token tok, int32_t idx) {
  const auto now = Clock::now();
  if (s.n_generated == 0) {
    metrics_->time_to_first_token_seconds.Observe(Seconds(now - s.handle->submitted_at));
  } else {
    metrics_->inter_token_latency_seconds.Observe(Seconds(now - s.last_token_at));
  }
  s.last_token_at = now;
  s.last_token = tok;

  if (model_.IsEndOfGeneration(tok)) {
    Finish(s, FinishReason::kStop);
    return;
  }
  ++s.n_generated;
  ++metrics_->completion_tokens_total;
  if (s.req.want_logprobs) s.sum_logprob += ctx_->TokenLogProb(idx, tok);

  s.utf8_pending += model_.TokenPiece(tok);
  const size_t hold = util::IncompleteUtf8Tail(s.utf8_pending);
  std::string whole = s.utf8_pending.substr(0, s.utf8_pending.size() - hold);
  s.utf8_pending.erase(0, s.utf8_pending.size() - hold);
  std::string out = s.stop->Feed(whole);
  if (s.stop->stopped()) {
    GenerationEvent ev;
    ev.text = std::move(out);
    s.handle->Push(std::move(ev));
    Finish(s, FinishReason::kStop);
    return;
  }
  const bool at_max = s.req.max_tokens > 0 && s.n_generated >= s.req.max_tokens;
  const bool ctx_full = s.n_past + 1 >= options_.ctx_per_session;
  if (!out.empty()) {
    GenerationEvent ev;
    ev.text = std::move(out);
    s.handle->Push(std::move(ev));
  }
  if (at_max || ctx_full) Finish(s, FinishReason::kLength);
}

void Scheduler::Finish(Slot& s, FinishReason why, Status error) {
  GenerationEvent ev;
  ev.done = true;
  ev.finish = why;
  ev.error = std::move(error);
  if (why == FinishReason::kStop || why == FinishReason::kLength) {
    // The held-back tail can no longer become a stop string.
    ev.text = s.stop->stopped() ? std::string() : s.stop->Flush() + s.utf8_pending;
  }
  ev.usage.prompt_tokens = static_cast<int32_t>(s.req.prompt.size());
  ev.usage.completion_tokens = s.n_generated;
  ev.usage.sum_logprob = s.sum_logprob;
  s.handle->Push(std::move(ev));

  const auto now = Clock::now();
  metrics_->request_duration_seconds.Observe(Seconds(now - s.handle->submitted_at));
  ctx_->RemoveSequence(s.seq);
  s.state = SlotState::kIdle;
  s.i_batch = -1;
  s.handle.reset();
  s.sampler.reset();
  s.stop.reset();
  std::lock_guard<std::mutex> lock(mu_);
  --active_;
  if (why == FinishReason::kStop || why == FinishReason::kLength) {
    mean_completion_tokens_ = 0.8 * mean_completion_tokens_ + 0.2 * std::max(1, s.n_generated);
  }
  metrics_->active_sequences = active_;
}

void Scheduler::FailBatch(const Status& st) {
  for (auto& s : slots_) {
    if (s.state == SlotState::kIdle) continue;
    Finish(s, FinishReason::kError, Status::Internal("inference failed: " + st.message()));
  }
}

void Scheduler::UpdateRate(int32_t n_sampled, Clock::duration step) {
  // Rate over busy time only (idle gaps do not dilute it), refreshed each second.
  rate_window_tokens_ += n_sampled;
  rate_window_busy_ += step;
  const double dt = Seconds(rate_window_busy_);
  if (dt < 1.0) return;
  const double tps = static_cast<double>(rate_window_tokens_) / dt;
  rate_window_tokens_ = 0;
  rate_window_busy_ = Clock::duration::zero();
  std::lock_guard<std::mutex> lock(mu_);
  decode_tps_ = decode_tps_ <= 0 ? tps : 0.5 * decode_tps_ + 0.5 * tps;
  metrics_->decode_tokens_per_second = decode_tps_;
}

}  // namespace outpost::scheduler

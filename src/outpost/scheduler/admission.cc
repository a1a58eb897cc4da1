// Scheduler admission (scheduler.h): Submit() from any thread — capacity and
// the bounded queue, a full queue displacing the lowest class — and, on the
// engine thread, AdmitLocked() moving queued requests into idle slots (class
// order with aging, cancelled and expired requests dropped) and
// PreemptBatch() ending running batch-class work a higher class waits for.
#include "outpost/scheduler/scheduler.h"

#include <algorithm>
#include <cmath>

#include "outpost/util/status_macros.h"

namespace outpost::scheduler {

using util::Seconds;

Status Scheduler::CheckFits(const GenerationRequest& req) const {
  const auto n_prompt = static_cast<int32_t>(req.prompt.size());
  if (n_prompt == 0) return Status::InvalidArgument("the prompt is empty", "prompt");
  if (n_prompt >= options_.ctx_per_session) {
    return Status::InvalidArgument("the prompt has " + std::to_string(n_prompt) +
                                       " tokens but the context per session is " +
                                       std::to_string(options_.ctx_per_session) +
                                       " tokens (at least one must remain for the answer)",
                                   "prompt")
        .WithErrorCode("context_length_exceeded");
  }
  if (req.n < 1 || req.n > options_.sessions) {
    return Status::InvalidArgument(
        "'n' asks for " + std::to_string(req.n) + " choices, but this model has " +
            std::to_string(options_.sessions) + " sessions (each choice takes one)",
        "n");
  }
  if (req.max_tokens > 0 && n_prompt + req.max_tokens > options_.ctx_per_session) {
    return Status::InvalidArgument(
               "the context per session is " + std::to_string(options_.ctx_per_session) +
                   " tokens, but " + std::to_string(n_prompt + req.max_tokens) +
                   " were requested (" + std::to_string(n_prompt) + " in the prompt, " +
                   std::to_string(req.max_tokens) +
                   " for the completion); lower max_tokens or shorten the prompt",
               "max_tokens")
        .WithErrorCode("context_length_exceeded");
  }
  return Status::Ok();
}

Status Scheduler::Submit(GenerationRequest req, std::shared_ptr<GenerationSink> sink) {
  OUTPOST_RETURN_IF_ERROR(CheckFits(req));
  const bool above_batch = req.priority != Priority::kBatch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || draining_) {
      stats_.rejected_by_reason.With({"shutting_down"}).Add();
      return Status::Unavailable("the server is shutting down");
    }
    // Requests in the queue that a free slot will take at the next step are not
    // waiting; only those beyond the sessions count against max_queue.
    const auto in_system = active_ + queued_choices_;
    const int cls = static_cast<int>(req.priority);
    const int32_t over = in_system + req.n - (options_.sessions + options_.max_queue);
    if (over > 0 && !DisplaceLowerLocked(cls, PatientLocked(req), over)) {
      const int32_t retry = RetryAfterLocked();
      stats_.rejected.Add();
      stats_.rejected_by_reason.With({"queue_full"}).Add();
      return Status::ResourceExhausted("over capacity: all " + std::to_string(options_.sessions) +
                                       " sessions are busy and the queue holds " +
                                       std::to_string(in_system - options_.sessions) + " of " +
                                       std::to_string(options_.max_queue) +
                                       " requests; retry after " + std::to_string(retry) + " s")
          .WithRetryAfter(retry);
    }
    queued_choices_ += req.n;
    queue_[cls].push_back(Queued{std::move(req), std::move(sink), clock_->Now()});
    stats_.queue_depth.Set(static_cast<double>(QueueLengthLocked()));
  }
  if (above_batch) interrupt_.store(true, std::memory_order_relaxed);
  cv_.notify_one();
  return Status::Ok();
}

SchedulerSnapshot Scheduler::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  SchedulerSnapshot s;
  s.max_sessions = options_.sessions;
  s.active = active_;
  s.queued = queued_choices_;
  s.max_queue = options_.max_queue;
  s.decode_tokens_per_second = decode_tps_;
  // The same rule as Submit()'s.
  s.would_wait = s.active + s.queued >= s.max_sessions;
  s.full = s.active + s.queued >= s.max_sessions + s.max_queue;
  s.estimated_wait_ms = s.would_wait ? static_cast<int64_t>(WaitSecondsLocked() * 1000.0) : 0;
  s.prefix_cache = options_.prefix_cache;
  s.prefix_cache_tokens = cache_tokens_.load(std::memory_order_relaxed);
  s.prompt_tokens = prompt_tokens_.load(std::memory_order_relaxed);
  s.prompt_tokens_cached = prompt_tokens_cached_.load(std::memory_order_relaxed);
  s.pinned_prompts = pinned_ready_.load(std::memory_order_relaxed);
  s.pinned_tokens = pinned_tokens_.load(std::memory_order_relaxed);
  s.pinned_restores = pinned_restores_.load(std::memory_order_relaxed);
  return s;
}

double Scheduler::WaitSecondsLocked() const {
  // Time until a session frees for one more request: everyone queued ahead plus
  // this one, each needing a mean completion, at the measured aggregate decode
  // rate. Before any measurement, assume 10 tokens/s per session.
  const double queued = static_cast<double>(QueueLengthLocked());
  const double rate = decode_tps_ > 0.5 ? decode_tps_ : 10.0 * options_.sessions;
  return (queued + 1.0) * mean_completion_tokens_ / rate;
}

int32_t Scheduler::RetryAfterLocked() const {
  return static_cast<int32_t>(std::clamp(std::ceil(WaitSecondsLocked()), 1.0, 3600.0));
}

size_t Scheduler::QueueLengthLocked() const {
  size_t n = 0;
  for (const auto& q : queue_) n += q.size();
  return n;
}

std::deque<Scheduler::Queued>* Scheduler::NextQueueLocked() {
  std::deque<Queued>* next = nullptr;
  util::Clock::TimePoint best;
  const auto aging = std::chrono::milliseconds(options_.priority_aging_ms);
  for (int c = 0; c < kPriorityClasses; ++c) {
    if (queue_[c].empty()) continue;
    if (options_.priority_aging_ms <= 0) return &queue_[c];
    // Ties go to the higher class (the first found).
    const auto t = queue_[c].front().enqueued + c * aging;
    if (next == nullptr || t < best) {
      next = &queue_[c];
      best = t;
    }
  }
  return next;
}

bool Scheduler::DisplaceLowerLocked(int cls, bool patient, int32_t needed) {
  // Who gives way: every queued request of a lower class and, to one that
  // is not patient, the patient ones of its own class (a background
  // response waits longer than a client on a socket does). Lowest class
  // first, newest first.
  auto gives_way = [&](int c, const Queued& q) {
    return c > cls || (c == cls && !patient && PatientLocked(q.req));
  };
  int32_t available = 0;
  for (int c = cls; c < kPriorityClasses; ++c) {
    for (const auto& q : queue_[c]) available += gives_way(c, q) ? q.req.n : 0;
  }
  if (available < needed) return false;
  for (int c = kPriorityClasses - 1; c >= cls && needed > 0; --c) {
    std::deque<Queued>& q = queue_[c];
    for (auto it = q.end(); it != q.begin() && needed > 0;) {
      --it;
      if (!gives_way(c, *it)) continue;
      Queued victim = std::move(*it);
      it = q.erase(it);
      queued_choices_ -= victim.req.n;
      needed -= victim.req.n;
      const int32_t retry = RetryAfterLocked();
      GenerationResult r;
      r.finish = FinishReason::kError;
      const std::string to = c > cls ? "one of a higher class (priority > default > flex > batch)"
                                     : "one a client is waiting on";
      r.error = Status::ResourceExhausted(std::string("over capacity: this '") +
                                          PriorityName(static_cast<Priority>(c)) +
                                          "' request gave its place in the queue to " + to +
                                          "; retry after " + std::to_string(retry) + " s")
                    .WithRetryAfter(retry);
      stats_.rejected.Add();
      stats_.rejected_by_reason.With({"displaced"}).Add();
      victim.sink->OnDone(std::move(r));
    }
  }
  return true;
}

int32_t Scheduler::AdmitLocked() {
  const auto now = clock_->Now();
  for (auto& q : queue_) {
    // One pass: cancelled requests leave the queue at once (they hold no
    // KV); requests that waited too long — max_queue_wait, or their own
    // wait (anywhere in the queue, so not only at its front) — expire.
    for (auto it = q.begin(); it != q.end();) {
      const int64_t wait_ms =
          it->req.max_queue_wait_ms > 0 ? it->req.max_queue_wait_ms : options_.max_queue_wait_ms;
      const bool cancelled = it->sink->Cancelled();
      if (!cancelled && now - it->enqueued <= std::chrono::milliseconds(wait_ms)) {
        ++it;
        continue;
      }
      GenerationResult r;
      if (cancelled) {
        r.finish = FinishReason::kCancelled;
      } else {
        r.finish = FinishReason::kError;
        const int32_t retry = RetryAfterLocked();
        r.error = Status::ResourceExhausted(
                      "over capacity: waited " + std::to_string(wait_ms) +
                      " ms in the queue (max_queue_wait) without a free session; retry after " +
                      std::to_string(retry) + " s")
                      .WithRetryAfter(retry);
        stats_.rejected.Add();
        stats_.rejected_by_reason.With({"queue_timeout"}).Add();
      }
      queued_choices_ -= it->req.n;
      it->sink->OnDone(std::move(r));
      it = q.erase(it);
    }
  }
  // Admit into idle slots, by class with aging (NextQueueLocked), first come
  // first served within a class; a request with n choices waits until n slots
  // are idle at once.
  for (;;) {
    std::deque<Queued>* from = NextQueueLocked();
    if (from == nullptr) break;
    const auto n = static_cast<size_t>(from->front().req.n);
    size_t n_idle = 0;
    for (const auto& s : slots_) n_idle += s.state == SlotState::kIdle ? 1 : 0;
    if (n_idle < n) break;
    Queued q = std::move(from->front());
    from->pop_front();
    const bool cache = options_.prefix_cache && q.req.cache_prompt;
    const Reuse reuse = cache ? FindPrefix(q.req) : Reuse{};
    // A pinned prefix evicted from memory comes back from its file.
    const Reuse pin = cache ? FindPinned(q.req, reuse) : Reuse{};
    const Reuse pending = cache ? FindPending(q.req, pin.match > 0 ? pin : reuse) : Reuse{};
    const std::vector<size_t> idle =
        PickIdle(n, pending.match > 0 || pin.match > 0 ? Reuse{} : reuse);
    queued_choices_ -= q.req.n;
    // The latency histograms are interactive traffic's: a batch line waits
    // for idle capacity by design (the GenAI histograms have it as "batch").
    if (q.req.priority != Priority::kBatch) stats_.queue_time.Observe(Seconds(now - q.enqueued));
    auto group = std::make_shared<Group>();
    group->sink = q.sink;
    group->slots = idle;
    group->remaining = q.req.n;
    group->submitted = q.enqueued;
    group->operation = q.req.operation;
    group->priority = q.req.priority;
    group->result.choices.assign(n, FinishReason::kNone);
    group->result.usage.prompt_tokens = static_cast<int32_t>(q.req.prompt.size());
    stats_.prompt_tokens.Add(q.req.prompt.size());
    prompt_tokens_ += static_cast<int64_t>(q.req.prompt.size());
    for (size_t c = 0; c < n; ++c) {
      Slot& slot = slots_[idle[c]];
      // The leader starts from the reused prefix (in place, or copied from
      // its holder); every other slot drops what it cached.
      int32_t start = 0;
      // An idle holder passed over to keep the running sequences together
      // (PickIdle) lends a long prefix by copy; a short one is recomputed.
      const bool passed_over = reuse.from != idle[0] &&
                               slots_[reuse.from].state == SlotState::kIdle &&
                               reuse.match < options_.min_copied_prefix;
      if (c == 0 && pending.match == 0 && pin.match > 0) {
        start = DeferRestore(slot, pin.from, pin.match);
      } else if (c == 0 && pending.match == 0 && reuse.match > 0 && !passed_over) {
        start = StartFrom(slot, reuse.from, reuse.match);
      } else {
        TrimCache(slot, 0);
      }
      slot.kv_scope = q.req.cache_scope;
      slot.cached_at = now;
      if (c == 0) group->result.usage.cached_tokens = start;
      slot.req = c + 1 < n ? q.req : std::move(q.req);
      // Each choice draws its own tokens, even from a fixed seed.
      if (slot.req.sampling.has_seed) slot.req.sampling.seed += static_cast<uint32_t>(c);
      slot.sink = q.sink;
      slot.group = group;
      slot.choice = static_cast<int>(c);
      slot.submitted = q.enqueued;
      slot.state = c == 0 ? SlotState::kPrefill : SlotState::kFork;
      if (c == 0 && pending.match > 0) {
        slot.state = SlotState::kWait;
        slot.wait_from = pending.from;
        slot.wait_match = pending.match;
        slot.wait_group = slots_[pending.from].group;
      }
      if (Status st = engine_->StartSequence(slot.seq, slot.req.sampling); !st.ok()) {
        group->start_error = std::move(st);  // the next step finishes the group
      }
      slot.stop.emplace(slot.req.stop);
      slot.thinking.emplace(slot.req.sampling.thinking);
      slot.n_prompt_done = static_cast<size_t>(start);
      slot.n_past = start;
      slot.n_generated = 0;
      slot.sum_logprob = 0;
      slot.i_batch = -1;
      slot.utf8_pending.clear();
      slot.answer.clear();
      slot.logprobs_pending.clear();
      slot.draft.clear();
      slot.draft_idx.clear();
      slot.spec_accepted = 0;
      slot.spec_refused = 0;
      slot.shadow.clear();
      slot.shadow_next = 0;
      ++active_;
    }
  }
  stats_.queue_depth.Set(static_cast<double>(QueueLengthLocked()));
  stats_.active_sequences.Set(active_);
  return active_;
}

bool Scheduler::PreemptBatch() {
  int32_t needed = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::deque<Queued>* next = NextQueueLocked();
    if (next == nullptr || next == &queue_[static_cast<int>(Priority::kBatch)]) return false;
    int32_t idle = 0;
    for (const auto& s : slots_) idle += s.state == SlotState::kIdle ? 1 : 0;
    needed = next->front().req.n - idle;
  }
  if (needed <= 0) return false;
  std::vector<std::shared_ptr<Group>> victims;
  for (const auto& s : slots_) {
    if (s.state != SlotState::kIdle && s.choice == 0 && s.req.priority == Priority::kBatch) {
      victims.push_back(s.group);
    }
  }
  std::sort(victims.begin(), victims.end(),
            [](const auto& a, const auto& b) { return a->submitted > b->submitted; });
  for (const auto& g : victims) {
    if (needed <= 0) break;
    g->preempted = true;
    const std::vector<size_t> members = g->slots;
    for (size_t i : members) {
      Slot& s = slots_[i];
      if (s.state == SlotState::kIdle || s.group != g) continue;
      Finish(s, FinishReason::kError,
             Status::ResourceExhausted(
                 "preempted: this 'batch' request gave its session to a request of a higher "
                 "class (batch work only fills idle capacity); retry after 1 s")
                 .WithRetryAfter(1));
      --needed;
    }
    stats_.rejected_by_reason.With({"preempted"}).Add();
  }
  return !victims.empty();  // needed > 0: the first was ended
}

}  // namespace outpost::scheduler

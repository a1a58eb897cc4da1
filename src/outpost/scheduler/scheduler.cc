#include "outpost/scheduler/scheduler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "outpost/util/utf8.h"

namespace outpost::scheduler {

using util::Seconds;

Scheduler::Scheduler(std::unique_ptr<engine::Engine> engine, SchedulerOptions options,
                     SchedulerStats stats, const util::Clock* clock)
    : engine_(std::move(engine)), options_(options), stats_(stats), clock_(clock) {
  slots_.resize(static_cast<size_t>(options_.sessions));
  for (size_t i = 0; i < slots_.size(); ++i) slots_[i].seq = static_cast<engine::SeqId>(i);
  stats_.max_sessions.Set(options_.sessions);
  stats_.prefill_chunk_tokens.Set(options_.prefill_chunk);
  stats_.kv_bytes_limit.Set(static_cast<double>(engine_->KvBytesAllocated()));
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
  if (thread_.joinable()) {
    thread_.join();
  } else {
    DrainOnStop();  // never started (or test-driven): answer what is queued
  }
}

Status Scheduler::Prepare(const PromptInput& in, bool ignore_eos, GenerationRequest* req) const {
  const engine::Engine& e = *engine_;
  const int32_t n_vocab = e.VocabSize();
  for (const auto& [tok, bias] : req->sampling.logit_bias) {
    if (tok >= n_vocab) {
      return Status::InvalidArgument("'logit_bias' token id " + std::to_string(tok) +
                                         " is outside the vocabulary [0, " +
                                         std::to_string(n_vocab) + ")",
                                     "logit_bias");
    }
  }
  engine::ChatPrompt chat;
  if (in.chat) {
    if (in.tools && !e.NativeToolCalls()) {
      return Status::InvalidArgument("the model's chat template has no tool-call format", "tools");
    }
    auto rendered = e.ApplyChatTemplate(in.messages, in.tools ? &*in.tools : nullptr);
    if (!rendered.ok()) return rendered.status();
    chat = std::move(rendered).value();
    req->prompt = e.Tokenize(chat.text, /*add_special=*/true, /*parse_special=*/true);
    for (auto& s : chat.stops) req->stop.push_back(std::move(s));
  } else if (!in.tokens.empty()) {
    for (size_t i = 0; i < in.tokens.size(); ++i) {
      if (in.tokens[i] >= n_vocab) {
        const std::string f = "prompt[" + std::to_string(i) + "]";
        return Status::InvalidArgument("'" + f + "' token id " + std::to_string(in.tokens[i]) +
                                           " is outside the vocabulary [0, " +
                                           std::to_string(n_vocab) + ")",
                                       f);
      }
    }
    req->prompt = in.tokens;
  } else {
    req->prompt = e.Tokenize(in.text, /*add_special=*/true, /*parse_special=*/true);
  }
  req->sampling = engine::ResolveSampling(req->sampling, e.DefaultSampling());
  switch (in.response_format.type) {
    case engine::ResponseFormat::Type::kText:
      break;
    case engine::ResponseFormat::Type::kJsonObject:
    case engine::ResponseFormat::Type::kJsonSchema: {
      const bool any = in.response_format.type == engine::ResponseFormat::Type::kJsonObject;
      auto g = e.GrammarFromJsonSchema(any ? R"({"type":"object"})" : in.response_format.schema,
                                       "response_format.json_schema.schema");
      if (!g.ok()) return g.status();
      req->sampling.grammar = std::move(g).value();
      break;
    }
  }
  if (!chat.grammar.empty()) {
    if (!req->sampling.grammar.empty()) {
      return Status::InvalidArgument("'response_format' cannot be combined with tools",
                                     "response_format");
    }
    req->sampling.grammar = std::move(chat.grammar);
    req->sampling.grammar_lazy = chat.grammar_lazy;
    req->sampling.grammar_triggers = std::move(chat.grammar_triggers);
    req->sampling.grammar_prefix = std::move(chat.grammar_prefix);
  }
  req->special_tokens = std::move(chat.special_tokens);
  req->answer_parser = std::move(chat.parser);
  if (ignore_eos) {
    for (engine::Token t : e.EndOfGenerationTokens())
      req->sampling.logit_bias.emplace_back(t, -100.0f);
  }
  return Status::Ok();
}

Status Scheduler::Submit(GenerationRequest req, std::shared_ptr<GenerationSink> sink) {
  const auto n_prompt = static_cast<int32_t>(req.prompt.size());
  if (n_prompt == 0) return Status::InvalidArgument("the prompt is empty", "prompt");
  if (n_prompt >= options_.ctx_per_session) {
    return Status::InvalidArgument("the prompt has " + std::to_string(n_prompt) +
                                       " tokens but the context per session is " +
                                       std::to_string(options_.ctx_per_session) +
                                       " tokens (at least one must remain for the answer)",
                                   "prompt");
  }
  if (req.n < 1 || req.n > options_.sessions) {
    return Status::InvalidArgument(
        "'n' asks for " + std::to_string(req.n) + " choices, but this model has " +
            std::to_string(options_.sessions) + " sessions (each choice takes one)",
        "n");
  }
  if (req.max_tokens > 0 && n_prompt + req.max_tokens > options_.ctx_per_session) {
    return Status::InvalidArgument(
        "the context per session is " + std::to_string(options_.ctx_per_session) + " tokens, but " +
            std::to_string(n_prompt + req.max_tokens) + " were requested (" +
            std::to_string(n_prompt) + " in the prompt, " + std::to_string(req.max_tokens) +
            " for the completion); lower max_tokens or shorten the prompt",
        "max_tokens");
  }
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
    if (over > 0 && !DisplaceLowerLocked(cls, over)) {
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

bool Scheduler::DisplaceLowerLocked(int cls, int32_t needed) {
  int32_t lower = 0;
  for (int c = cls + 1; c < kPriorityClasses; ++c) {
    for (const auto& q : queue_[c]) lower += q.req.n;
  }
  if (lower < needed) return false;
  for (int c = kPriorityClasses - 1; c > cls && needed > 0; --c) {
    while (!queue_[c].empty() && needed > 0) {
      Queued victim = std::move(queue_[c].back());
      queue_[c].pop_back();
      queued_choices_ -= victim.req.n;
      needed -= victim.req.n;
      const int32_t retry = RetryAfterLocked();
      GenerationResult r;
      r.finish = FinishReason::kError;
      r.error = Status::ResourceExhausted(
                    std::string("over capacity: this '") + PriorityName(static_cast<Priority>(c)) +
                    "' request gave its place in the queue to one of a higher class "
                    "(priority > default > flex > batch); retry after " +
                    std::to_string(retry) + " s")
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
  const auto max_wait = std::chrono::milliseconds(options_.max_queue_wait_ms);
  for (auto& q : queue_) {
    // Cancelled requests leave the queue at once (they hold no KV).
    for (auto it = q.begin(); it != q.end();) {
      if (it->sink->Cancelled()) {
        GenerationResult r;
        r.finish = FinishReason::kCancelled;
        queued_choices_ -= it->req.n;
        it->sink->OnDone(std::move(r));
        it = q.erase(it);
      } else {
        ++it;
      }
    }
    // Expire requests that waited too long.
    while (!q.empty() && now - q.front().enqueued > max_wait) {
      GenerationResult r;
      r.finish = FinishReason::kError;
      const int32_t retry = RetryAfterLocked();
      r.error = Status::ResourceExhausted(
                    "over capacity: waited " + std::to_string(options_.max_queue_wait_ms) +
                    " ms in the queue (max_queue_wait) without a free session; retry after " +
                    std::to_string(retry) + " s")
                    .WithRetryAfter(retry);
      stats_.rejected.Add();
      stats_.rejected_by_reason.With({"queue_timeout"}).Add();
      queued_choices_ -= q.front().req.n;
      q.front().sink->OnDone(std::move(r));
      q.pop_front();
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
    const Reuse pending = cache ? FindPending(q.req, reuse) : Reuse{};
    const std::vector<size_t> idle = PickIdle(n, pending.match > 0 ? Reuse{} : reuse);
    queued_choices_ -= q.req.n;
    stats_.queue_time.Observe(Seconds(now - q.enqueued));
    auto group = std::make_shared<Group>();
    group->sink = q.sink;
    group->slots = idle;
    group->remaining = q.req.n;
    group->submitted = q.enqueued;
    group->operation = q.req.operation;
    group->result.choices.assign(n, FinishReason::kNone);
    group->result.usage.prompt_tokens = static_cast<int32_t>(q.req.prompt.size());
    stats_.prompt_tokens.Add(q.req.prompt.size());
    prompt_tokens_ += static_cast<int64_t>(q.req.prompt.size());
    for (size_t c = 0; c < n; ++c) {
      Slot& slot = slots_[idle[c]];
      // The leader starts from the reused prefix (in place, or copied from
      // its holder); every other slot drops what it cached.
      int32_t start = 0;
      if (c == 0 && pending.match == 0 && reuse.match > 0) {
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
      slot.n_prompt_done = static_cast<size_t>(start);
      slot.n_past = start;
      slot.n_generated = 0;
      slot.sum_logprob = 0;
      slot.i_batch = -1;
      slot.utf8_pending.clear();
      slot.logprobs_pending.clear();
      ++active_;
    }
  }
  stats_.queue_depth.Set(static_cast<double>(QueueLengthLocked()));
  stats_.active_sequences.Set(active_);
  return active_;
}

bool Scheduler::WaitForWork() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (stopping_) return false;
    if (AdmitLocked() > 0) return true;
    // Nothing active means nothing queued either (a free slot takes any queued
    // request), so there is nothing to expire: sleep until Submit() or Stop().
    cv_.wait(lock);
  }
}

bool Scheduler::StepForTest() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (AdmitLocked() == 0) return false;
  }
  Step();
  return true;
}

void Scheduler::BuildBatch(int32_t* n_decode, int32_t* n_prefill) {
  engine_->ClearBatch();
  *n_decode = 0;
  *n_prefill = 0;
  // While a prompt above the batch class is prefilled (its first token is
  // what a user waits for), batch-class sequences sit the step out: paused
  // for a step, so the step is as short as without them.
  bool urgent = false;
  for (const auto& s : slots_) {
    urgent = urgent || (s.state == SlotState::kPrefill && s.req.priority != Priority::kBatch);
  }
  const auto sits_out = [urgent](const Slot& s) {
    return urgent && s.req.priority == Priority::kBatch;
  };
  for (auto& s : slots_) {
    s.i_batch = -1;
    if (s.state != SlotState::kDecode || sits_out(s)) continue;
    s.i_batch = engine_->Add(s.last_token, s.n_past, s.seq, true);
    s.kv.push_back(s.last_token);
    ++s.n_past;
    ++*n_decode;
  }
  // Prefill chunk: bounded while others decode, the whole batch otherwise;
  // higher admission classes first, then the earliest arrival.
  int32_t budget = options_.batch_size - *n_decode;
  if (*n_decode > 0) budget = std::min(budget, PrefillChunk());
  std::vector<Slot*> prefill;
  for (auto& s : slots_) {
    if (s.state == SlotState::kPrefill && !sits_out(s)) prefill.push_back(&s);
  }
  std::stable_sort(prefill.begin(), prefill.end(), [](const Slot* a, const Slot* b) {
    if (a->req.priority != b->req.priority) return a->req.priority < b->req.priority;
    return a->submitted < b->submitted;
  });
  for (Slot* sp : prefill) {
    if (budget <= 0) break;
    Slot& s = *sp;
    const size_t remaining = s.req.prompt.size() - s.n_prompt_done;
    const auto take =
        static_cast<int32_t>(std::min<size_t>(remaining, static_cast<size_t>(budget)));
    for (int32_t k = 0; k < take; ++k) {
      const bool last = s.n_prompt_done + 1 == s.req.prompt.size();
      const int32_t idx = engine_->Add(s.req.prompt[s.n_prompt_done], s.n_past, s.seq, last);
      s.kv.push_back(s.req.prompt[s.n_prompt_done]);
      if (last) s.i_batch = idx;
      ++s.n_prompt_done;
      ++s.n_past;
    }
    budget -= take;
    *n_prefill += take;
  }
}

void Scheduler::Loop() {
  spdlog::info(
      "engine thread started: {} sessions x {} tokens, batch {}, prefill chunk {}, step budget {}",
      options_.sessions, options_.ctx_per_session, options_.batch_size, options_.prefill_chunk,
      options_.step_budget_ms > 0 ? std::to_string(options_.step_budget_ms) + " ms" : "off");
  auto stamp = [this] {
    loop_progress_.store(clock_->Now().time_since_epoch().count(), std::memory_order_relaxed);
  };
  while (WaitForWork()) {
    stamp();
    Step();
    stamp();
  }
  DrainOnStop();
}

void Scheduler::BeginDrain() {
  std::lock_guard<std::mutex> lock(mu_);
  draining_ = true;
}

bool Scheduler::Responsive(int64_t max_step_ms) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (active_ == 0 && QueueLengthLocked() == 0) return true;
  }
  const util::Clock::TimePoint last{
      util::Clock::Duration(loop_progress_.load(std::memory_order_relaxed))};
  return clock_->Now() - last < std::chrono::milliseconds(max_step_ms);
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

void Scheduler::Step() {
  if (PreemptBatch()) {
    // The freed sessions go to the waiting request in this step, not the next.
    std::lock_guard<std::mutex> lock(mu_);
    AdmitLocked();
  }
  // Requests whose client went away free their sequence before decoding.
  for (auto& s : slots_) {
    if (s.state == SlotState::kIdle) continue;
    if (!s.group->start_error.ok()) {
      Finish(s, FinishReason::kError, s.group->start_error);
    } else if (s.sink->Cancelled()) {
      Finish(s, FinishReason::kCancelled);
    }
  }
  ResolveWaits();
  int32_t n_decode = 0, n_prefill = 0;
  BuildBatch(&n_decode, &n_prefill);
  if (engine_->BatchSize() == 0) return;

  const auto step_start = clock_->Now();
  const Status st = engine_->Decode();
  if (!st.ok()) {
    spdlog::error("decode of {} tokens failed: {}", engine_->BatchSize(), st.ToString());
    FailBatch(st);
    return;
  }
  // A leader whose prompt is now in the KV hands a copy to its other choices;
  // they sample their first tokens from the same logits.
  for (auto& s : slots_) {
    if (s.i_batch < 0 || s.state != SlotState::kPrefill || s.group->slots.size() < 2) continue;
    for (size_t k = 1; k < s.group->slots.size(); ++k) {
      Slot& f = slots_[s.group->slots[k]];
      if (f.state != SlotState::kFork) continue;
      engine_->CopySequence(s.seq, f.seq);
      f.kv = s.kv;
      f.n_past = s.n_past;
      f.n_prompt_done = f.req.prompt.size();
      f.i_batch = s.i_batch;
    }
  }
  int32_t n_sampled = 0;
  for (auto& s : slots_) {
    if (s.i_batch < 0) continue;
    const engine::Token tok = engine_->Sample(s.seq, s.i_batch);
    s.state = SlotState::kDecode;
    HandleSampled(s, tok, s.i_batch);
    ++n_sampled;
  }
  const auto step_time = clock_->Now() - step_start;
  UpdateRate(n_sampled, n_prefill, step_time);
  LearnStepCost(n_decode, n_prefill, step_time);
  spdlog::trace("step: {} decode + {} prefill tokens, {} sampled, {:.1f} ms", n_decode, n_prefill,
                n_sampled, Seconds(step_time) * 1000);
  uint64_t held = 0, cached = 0;
  for (const auto& s : slots_) {
    held += s.kv.size();
    if (s.state == SlotState::kIdle) cached += s.kv.size();
  }
  const double used = static_cast<double>(held * options_.kv_bytes_per_token);
  stats_.kv_bytes_used.Set(used);
  const double limit = stats_.kv_bytes_limit.value();
  stats_.kv_usage_ratio.Set(limit > 0 ? std::min(1.0, used / limit) : 0.0);
  stats_.prefix_cache_tokens.Set(static_cast<double>(cached));
  cache_tokens_.store(static_cast<int64_t>(cached), std::memory_order_relaxed);
}

void Scheduler::DrainOnStop() {
  // Stopping: finish everything still running or queued.
  for (auto& s : slots_) {
    if (s.state != SlotState::kIdle)
      Finish(s, FinishReason::kError, Status::Unavailable("the server is shutting down"));
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& q : queue_) {
    for (auto& item : q) {
      GenerationResult r;
      r.finish = FinishReason::kError;
      r.error = Status::Unavailable("the server is shutting down");
      item.sink->OnDone(std::move(r));
    }
    q.clear();
  }
  queued_choices_ = 0;
}

void Scheduler::HandleSampled(Slot& s, engine::Token tok, int32_t idx) {
  const auto now = clock_->Now();
  if (s.n_generated == 0) {
    stats_.time_to_first_token.Observe(Seconds(now - s.submitted));
    if (s.group && !s.group->has_first_token) {
      s.group->has_first_token = true;
      s.group->first_token = now;
    }
  } else {
    stats_.inter_token_latency.Observe(Seconds(now - s.last_token_at));
  }
  s.last_token_at = now;
  s.last_token = tok;

  if (engine_->IsEndOfGeneration(tok)) {
    Finish(s, FinishReason::kStop);
    return;
  }
  ++s.n_generated;
  stats_.completion_tokens.Add();
  if (s.req.top_logprobs >= 0) {
    const engine::TokenLogprob lp = engine_->TopLogProbs(idx, tok, s.req.top_logprobs);
    s.sum_logprob += lp.logprob;
    TokenInfo info;
    info.piece = engine_->TokenPiece(tok, false);
    info.logprob = lp.logprob;
    for (const auto& [t, v] : lp.top) info.top.emplace_back(engine_->TokenPiece(t, false), v);
    s.logprobs_pending.push_back(std::move(info));
  } else if (s.req.want_logprobs) {
    s.sum_logprob += engine_->TopLogProbs(idx, tok, 0).logprob;
  }

  const bool special = !s.req.special_tokens.empty() &&
                       std::find(s.req.special_tokens.begin(), s.req.special_tokens.end(), tok) !=
                           s.req.special_tokens.end();
  s.utf8_pending += engine_->TokenPiece(tok, special);
  const size_t hold = util::IncompleteUtf8Tail(s.utf8_pending);
  std::string whole = s.utf8_pending.substr(0, s.utf8_pending.size() - hold);
  s.utf8_pending.erase(0, s.utf8_pending.size() - hold);
  std::string out = s.stop->Feed(whole);
  if (s.stop->stopped()) {
    Emit(s, std::move(out));
    Finish(s, FinishReason::kStop);
    return;
  }
  const bool at_max = s.req.max_tokens > 0 && s.n_generated >= s.req.max_tokens;
  const bool ctx_full = s.n_past + 1 >= options_.ctx_per_session;
  Emit(s, std::move(out));
  if (at_max || ctx_full) Finish(s, FinishReason::kLength);
}

void Scheduler::Emit(Slot& s, std::string text) {
  if (text.empty()) return;
  if (!s.logprobs_pending.empty()) s.sink->OnLogprobs(s.choice, std::move(s.logprobs_pending));
  s.logprobs_pending.clear();
  s.sink->OnText(s.choice, std::move(text));
}

void Scheduler::Finish(Slot& s, FinishReason why, Status error) {
  if (why == FinishReason::kStop || why == FinishReason::kLength) {
    // The held-back tail can no longer become a stop string.
    std::string tail = s.stop->stopped() ? std::string() : s.stop->Flush() + s.utf8_pending;
    if (tail.empty() && !s.stop->stopped() && !s.logprobs_pending.empty()) {
      // Tokens with no text of their own (control tokens) still count.
      s.sink->OnLogprobs(s.choice, std::move(s.logprobs_pending));
    }
    Emit(s, std::move(tail));
  }
  s.logprobs_pending.clear();
  const std::shared_ptr<Group> g = std::move(s.group);
  g->result.choices[static_cast<size_t>(s.choice)] = why;
  g->generated += s.n_generated;
  if (why == FinishReason::kError && g->result.error.ok()) g->result.error = std::move(error);
  g->result.usage.completion_tokens += s.n_generated;
  g->result.usage.sum_logprob += s.sum_logprob;
  if (options_.prefix_cache && why != FinishReason::kError) {
    s.cached_at = clock_->Now();  // the KV stays, for a later prompt with the same prefix
  } else {
    engine_->RemoveSequence(s.seq);
    s.kv.clear();
  }
  s.state = SlotState::kIdle;
  s.i_batch = -1;
  s.sink.reset();
  s.stop.reset();
  // Choices still waiting for this leader's prompt cannot start without it.
  if (s.choice == 0) {
    for (size_t k = 1; k < g->slots.size(); ++k) {
      Slot& f = slots_[g->slots[k]];
      if (f.state == SlotState::kFork && f.group == g) {
        Finish(f, why == FinishReason::kCancelled ? why : FinishReason::kError,
               why == FinishReason::kCancelled ? Status::Ok() : g->result.error);
      }
    }
  }
  if (--g->remaining == 0) {
    GenerationResult r = std::move(g->result);
    r.finish = r.choices[0];
    for (FinishReason c : r.choices) {
      if (c == FinishReason::kError) r.finish = FinishReason::kError;
    }
    if (r.finish == FinishReason::kError && r.error.ok())
      r.error = Status::Internal("a choice failed");
    const FinishReason finish = r.finish;
    const std::string error_type = finish == FinishReason::kError ? StatusCodeName(r.error.code())
                                   : finish == FinishReason::kCancelled ? "cancelled"
                                                                        : "";
    stats_.finished.With({FinishReasonName(finish)}).Add();
    g->sink->OnDone(std::move(r));
    const double duration = Seconds(clock_->Now() - g->submitted);
    stats_.request_duration.Observe(duration);
    if (genai_) {
      const int32_t choices = static_cast<int32_t>(g->slots.size());
      genai_->Record(g->operation, duration,
                     g->has_first_token ? Seconds(g->first_token - g->submitted) : -1,
                     choices > 0 ? g->generated / choices : g->generated, error_type);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  --active_;
  if (why == FinishReason::kStop || why == FinishReason::kLength) {
    mean_completion_tokens_ = 0.8 * mean_completion_tokens_ + 0.2 * std::max(1, s.n_generated);
  }
  stats_.active_sequences.Set(active_);
}

Scheduler::Reuse Scheduler::FindPrefix(const GenerationRequest& req) const {
  const std::vector<engine::Token>& prompt = req.prompt;
  if (prompt.size() < 2) return Reuse{};
  // The last prompt token is always computed: its logits start the answer.
  const size_t limit = prompt.size() - 1;
  const int32_t window = engine_->SlidingWindow();
  Reuse in_place_best, copy_best;  // an idle holder is cut in place; a busy one is copied
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (s.kv.empty() || s.state == SlotState::kFork || s.kv_scope != req.cache_scope) continue;
    const size_t end = std::min(limit, s.kv.size());
    size_t m = 0;
    while (m < end && s.kv[m] == prompt[m]) ++m;
    // Sliding-window layers drop cells that fall out of every window: the
    // holder must still have the window before the cut (llama-server's rule).
    if (window > 0 && engine_->SequencePosMin(s.seq) > std::max<int32_t>(0, m - window)) continue;
    Reuse& best = s.state == SlotState::kIdle ? in_place_best : copy_best;
    if (static_cast<int32_t>(m) > best.match) best = Reuse{i, static_cast<int32_t>(m)};
  }
  // A copy moves the holder's whole KV stream: worth it only when it saves at
  // least min_copied_prefix tokens over the best idle holder.
  if (copy_best.match >= in_place_best.match + options_.min_copied_prefix) return copy_best;
  return in_place_best;
}

Scheduler::Reuse Scheduler::FindPending(const GenerationRequest& req, const Reuse& cached) const {
  // Sliding-window holders drop cells as they go on past the prefix; with
  // them a waiter could find its window gone, so only caches are used.
  if (req.prompt.size() < 2 || engine_->SlidingWindow() > 0) return Reuse{};
  const size_t limit = req.prompt.size() - 1;
  Reuse best;
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (s.state != SlotState::kPrefill || s.kv_scope != req.cache_scope) continue;
    const size_t end = std::min(limit, s.req.prompt.size());
    size_t m = 0;
    while (m < end && s.req.prompt[m] == req.prompt[m]) ++m;
    if (m <= s.kv.size()) continue;  // what is decoded already is a cache (FindPrefix)
    if (static_cast<int32_t>(m) > best.match) best = Reuse{i, static_cast<int32_t>(m)};
  }
  if (best.match >= cached.match + options_.min_copied_prefix) return best;
  return Reuse{};
}

void Scheduler::ResolveWaits() {
  for (auto& s : slots_) {
    if (s.state != SlotState::kWait) continue;
    const Slot& h = slots_[s.wait_from];
    const auto m = static_cast<size_t>(s.wait_match);
    const bool ready = h.state != SlotState::kFork && h.state != SlotState::kWait &&
                       h.kv_scope == s.kv_scope && h.kv.size() >= m &&
                       std::equal(s.req.prompt.begin(), s.req.prompt.begin() + m, h.kv.begin());
    const bool holder_busy_with_it = h.group == s.wait_group && h.state == SlotState::kPrefill;
    if (!ready && holder_busy_with_it) continue;  // its prefix is not decoded yet
    const int32_t start = ready ? StartFrom(s, s.wait_from, s.wait_match) : 0;
    s.group->result.usage.cached_tokens = start;
    s.n_prompt_done = static_cast<size_t>(start);
    s.n_past = start;
    s.state = SlotState::kPrefill;
    s.wait_group.reset();
  }
}

int32_t Scheduler::StartFrom(Slot& s, size_t from, int32_t keep) {
  const size_t self = static_cast<size_t>(&s - slots_.data());
  if (self != from) {
    TrimCache(s, 0);
    const Slot& holder = slots_[from];
    engine_->CopySequence(holder.seq, s.seq);
    s.kv = holder.kv;
  }
  if (!TrimCache(s, keep)) return 0;
  stats_.prompt_tokens_cached.Add(static_cast<uint64_t>(keep));
  prompt_tokens_cached_ += keep;
  return keep;
}

std::vector<size_t> Scheduler::PickIdle(size_t n, const Reuse& reuse) const {
  std::vector<size_t> picked;
  const bool in_place = reuse.match > 0 && slots_[reuse.from].state == SlotState::kIdle;
  if (in_place) picked.push_back(reuse.from);
  std::vector<size_t> rest;
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].state == SlotState::kIdle && !(in_place && i == reuse.from)) rest.push_back(i);
  }
  // Empty slots first, then the least recently used caches.
  std::stable_sort(rest.begin(), rest.end(), [&](size_t a, size_t b) {
    const Slot& x = slots_[a];
    const Slot& y = slots_[b];
    if (x.kv.empty() != y.kv.empty()) return x.kv.empty();
    return !x.kv.empty() && x.cached_at < y.cached_at;
  });
  for (size_t i : rest) {
    if (picked.size() == n) break;
    picked.push_back(i);
  }
  return picked;
}

bool Scheduler::TrimCache(Slot& s, int32_t keep) {
  if (static_cast<size_t>(keep) >= s.kv.size()) return true;
  if (engine_->TrimSequence(s.seq, keep)) {
    s.kv.resize(static_cast<size_t>(keep));
    return true;
  }
  engine_->RemoveSequence(s.seq);
  s.kv.clear();
  return false;
}

void Scheduler::FailBatch(const Status& st) {
  for (auto& s : slots_) {
    if (s.state == SlotState::kIdle) continue;
    Finish(s, FinishReason::kError, Status::Internal("inference failed: " + st.message()));
  }
}

void Scheduler::LearnStepCost(int32_t n_decode, int32_t n_prefill, util::Clock::Duration step) {
  if (options_.step_budget_ms <= 0 || n_decode == 0) return;
  const double ms = Seconds(step) * 1000.0;
  auto ema = [](double& v, double x) { v = v <= 0 ? x : 0.7 * v + 0.3 * x; };
  if (n_prefill == 0) {
    ema(decode_step_ms_, ms);
  } else if (decode_step_ms_ > 0) {
    ema(prefill_token_ms_, std::max(ms - decode_step_ms_, 0.0) / n_prefill);
  } else {
    // No decode-only step measured yet: every token costs the same.
    ema(prefill_token_ms_, ms / (n_decode + n_prefill));
  }
  stats_.prefill_chunk_tokens.Set(PrefillChunk());
}

int32_t Scheduler::PrefillChunk() const {
  if (options_.step_budget_ms <= 0 || prefill_token_ms_ <= 0) return options_.prefill_chunk;
  const double room = static_cast<double>(options_.step_budget_ms) - decode_step_ms_;
  const double tokens = room / prefill_token_ms_;
  const int32_t lo = std::min(kMinBudgetChunk, options_.prefill_chunk);
  if (tokens <= lo) return lo;
  if (tokens >= options_.prefill_chunk) return options_.prefill_chunk;
  return static_cast<int32_t>(tokens);
}

void Scheduler::UpdateRate(int32_t n_sampled, int32_t n_prefill, util::Clock::Duration step) {
  // Rates over busy time only (idle gaps do not dilute them), refreshed each
  // second; never reset by a scrape.
  rate_window_tokens_ += n_sampled;
  rate_window_prefill_ += n_prefill;
  rate_window_busy_ += step;
  const double dt = Seconds(rate_window_busy_);
  if (dt < 1.0) return;
  const double tps = static_cast<double>(rate_window_tokens_) / dt;
  const double pps = static_cast<double>(rate_window_prefill_) / dt;
  rate_window_tokens_ = 0;
  rate_window_prefill_ = 0;
  rate_window_busy_ = util::Clock::Duration::zero();
  prefill_tps_ = prefill_tps_ <= 0 ? pps : 0.5 * prefill_tps_ + 0.5 * pps;
  stats_.prefill_tokens_per_second.Set(prefill_tps_);
  std::lock_guard<std::mutex> lock(mu_);
  decode_tps_ = decode_tps_ <= 0 ? tps : 0.5 * decode_tps_ + 0.5 * tps;
  stats_.decode_tokens_per_second.Set(decode_tps_);
}

}  // namespace outpost::scheduler

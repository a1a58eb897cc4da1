// Scheduler — admission and continuous batching for one loaded model.
//
// Owns the engine thread, the only thread that touches the engine::Engine's
// decoding side. Callers Prepare() and Submit() requests from any thread; the
// engine thread pushes results into each request's GenerationSink as tokens
// are sampled. Every engine step builds ONE batch holding
//   * one token for every sequence that is decoding, then
//   * a bounded chunk of pending prompt tokens (prefill_chunk; the whole batch
//     when nobody is decoding),
// so a long prompt delays everyone else's next token by at most one chunk.
// With a step budget (step_budget_ms) the chunk is sized each step from the
// measured cost of the last steps — a decode-only step's time, and the time a
// prompt token adds — so that a step with prefill stays within the budget
// (never below kMinBudgetChunk tokens, never above prefill_chunk). Prompts
// are prefilled in admission-class order (priority first, batch last).
// Batch-class work gives way (batch_yield_ms): it sits out steps that prefill
// a higher-class prompt, is rationed to batch_busy_tokens per step while
// users are active, and a step of batch work only is interrupted — undone
// and redone later — when a higher-class request arrives mid-step.
//
// Admission: `sessions` slots (from the capacity plan); past that one bounded
// queue shared by four classes (Priority: the service tiers "priority",
// "default", "flex", then batch) with a maximum wait; past that Submit() fails
// with ResourceExhausted carrying a Retry-After derived from the queue length,
// the mean completion length and the measured decode rate — unless the queue
// holds requests of a lower class, which then give way: the newest of the
// lowest class is displaced (its sink gets ResourceExhausted with Retry-After).
// A free session takes the queued request that arrived first once each class
// counts priority_aging_ms later than the class above it: a higher class goes
// first, and a lower one that has waited long enough is not starved.
//
// Slot states (one per sequence id):
//
//     kIdle ──admit──▶ kPrefill ──last prompt token decoded──▶ kDecode
//       ▲   ├─admit─▶ kWait ──holder's prefix decoded: copied──▶ kPrefill
//       ▲   └─admit─▶ kFork ──leader's prompt decoded: KV copied──┘ │
//       └── finished / cancelled (KV kept as cache) / failed (freed) ◀┘
//
// A request with n choices takes n idle slots at once: the first (the
// leader) prefills the prompt, the other n-1 wait in kFork; when the leader's
// last prompt token is decoded they get a copy of its KV and sample their
// first tokens from the same logits, so the prompt is computed once.
//
// Prefix cache (prefix_cache, on by default): a finished sequence keeps its KV
// in its idle slot, with the tokens it holds. A new request's prompt is
// matched against every slot, idle or busy; the longest common prefix is
// reused — in place when the holder is idle (the tail beyond the match is
// cut), else copied into the chosen slot (llama_memory_seq_cp) and cut — and
// only the rest is prefilled, so a system prompt shared by concurrent
// sessions is computed once, not once per slot. Idle caches are reclaimable:
// a slot is taken for a new request whatever it holds: the one that keeps
// the running sequences in the fewest runs of consecutive ids (each run is
// a pass of its own over the weights; Engine::Decode), then the emptiest,
// then the least recently used. An idle holder of a prefix runs it in place
// unless that would split the running sequences where another slot would
// not; then a prefix of at least min_copied_prefix tokens is copied to that
// slot and a shorter one recomputed. A request that finishes between
// running ones leaves a hole; before the next batch is built the fewest
// running requests are moved into the holes (Engine::MoveSequence: a copy of
// the cells it holds, its sampler with it) so the decoding sequences form one run
// again, unless fewer than kMinMoveTokens are left to any that would move;
// the hole's cache moves out to an empty or least recently used idle slot.
// With sliding-window layers (Gemma 3) a holder
// drops cells as they leave the window, so a prefix is reused only while the
// holder still has the window before the cut. Prefixes are shared only
// among requests of one cache_scope (the router's tenant and data class).
// A burst of requests with a prefix nobody holds yet computes it once: a
// request whose prompt shares at least min_copied_prefix more tokens with a
// prompt still being prefilled than with any cache waits (kWait) until that
// prefix is decoded, then copies it.
//
// Invariants: a slot in kIdle holds no KV cells beyond its `kv` tokens (none
// with prefix_cache off); a sequence's KV never grows past ctx_per_session
// tokens; only the engine thread changes slot state; every accepted request's
// sink gets exactly one OnDone().
//
// Implemented in scheduler.cc (lifecycle, steps, sampling, finishing),
// admission.cc (Submit, the queue classes, admission, preemption),
// prefix_reuse.cc (the prefix cache), slot_moves.cc (running requests kept
// on consecutive slots), pinned_prompts.cc (prefixes pinned
// from the config: WarmPinned(), restored from disk) and step_cost.cc (measured rates and
// the step budget's chunk).
//
// Time comes from an injected util::Clock. The engine thread sleeps only when
// no sequence is active (then the queue is empty too) until Submit() or Stop()
// wakes it; it never wakes on a timer. Tests drive it with StepForTest().
#pragma once

#include <atomic>
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

#include "outpost/engine/engine.h"
#include "outpost/scheduler/draft_plan.h"
#include "outpost/scheduler/pinned_prompt.h"
#include "outpost/scheduler/request.h"
#include "outpost/scheduler/scheduler_stats.h"
#include "outpost/scheduler/stop_matcher.h"
#include "outpost/scheduler/thinking_counter.h"
#include "outpost/telemetry/genai_stats.h"
#include "outpost/util/clock.h"
#include "outpost/util/thread_annotations.h"

namespace outpost::scheduler {

struct SchedulerOptions {
  int32_t sessions = 1;            // concurrent sessions (= context sequences)
  int32_t ctx_per_session = 4096;  // tokens per session (prompt + completion)
  int32_t batch_size = 512;        // max tokens in one decode step
  int32_t prefill_chunk = 256;     // max prompt tokens per step while others decode
  // Target for one engine step while sequences decode (their inter-token
  // time): the prefill chunk is sized to stay under it. 0 = off (the chunk is
  // prefill_chunk).
  int64_t step_budget_ms = 0;
  int32_t max_queue = 16;             // queued requests beyond the sessions; 0 = no queue
  int64_t max_queue_wait_ms = 30000;  // a queued request older than this gets 503
  // Aging between admission classes: a queued request counts as having
  // arrived this much later per class below "priority". 0: strict class order.
  int64_t priority_aging_ms = 5000;
  uint64_t kv_bytes_per_token = 0;  // for the kv_bytes_used gauge
  bool prefix_cache = true;         // reuse cached prompt prefixes across sessions
  // A cached prefix is copied from a busy slot only when that saves at least
  // this many tokens over the best idle holder (a copy moves the holder's
  // whole KV stream; an idle holder is cut in place for free), and from an
  // idle holder passed over to keep the running sequences together only
  // when it is at least this long.
  int32_t min_copied_prefix = 16;
  // Draftless (n-gram) speculation: up to this many tokens guessed per
  // decoding sequence and step from its own history (ngram_draft.h), all
  // verified in the one step. 0 = off. Load-aware: only while at most
  // spec_max_batch sequences decode (past that, verification stops being
  // nearly free), no prompt is being prefilled, and never for the batch
  // class. Within that, a step carries the guesses that make its expected
  // tokens per second highest, from the measured cost of steps of each size
  // and each sequence's record (draft_plan.h): on a CPU whose rows cost
  // almost a token at four sequences only near-certain guesses go in; a
  // request whose guesses mostly fail stops guessing.
  int32_t spec_draft_max = 0;
  int32_t spec_max_batch = 4;
  // Move running requests into the holes finished ones leave between them
  // (see the header comment). Off only to measure what it buys.
  bool move_running = true;
  // The batch class beside interactive users: while a request above the
  // batch class runs, or ran within the last batch_yield_ms, a step carries
  // at most batch_busy_tokens batch-class tokens (decoding sequences first,
  // then prompt tokens); the other batch sequences sit the step out and keep
  // their KV. The step an arriving user's request waits behind then stays as
  // short as without the batch. 0 ms = off (batch work takes every free
  // token of every step). batch_busy_tokens >= 1: batch work always moves.
  // With batch_yield_ms > 0 a step that carries batch-class work only is
  // also interruptible: a request of a higher class arriving while it runs
  // cuts it short (Engine::DecodeInterruptible), the step is undone and the
  // newcomer admitted at once, so its wait for the engine is a graph node's
  // time, not a step's.
  int64_t batch_yield_ms = 0;
  int32_t batch_busy_tokens = 1;
  // Pinned prompt prefixes (pinned_prompt.h; needs prefix_cache): WarmPinned()
  // computes each, or reads it from pinned_dir, into an idle slot; once
  // evicted, a request that starts with one gets it back from its file when
  // that saves at least min_copied_prefix tokens over the best cache.
  // pinned_key names the model file and context settings (it goes into the
  // files' names); pinned_dir "" = keep nothing on disk. WarmPinned() then
  // bounds the directory to pinned_dir_max_bytes (PrunePinnedDir: least
  // recently used files of other models or settings first).
  std::vector<PinnedPrompt> pinned;
  std::string pinned_dir;
  std::string pinned_key;
  uint64_t pinned_dir_max_bytes = 1ull << 30;
};

// Point-in-time view for /ready and the router's load rule.
struct SchedulerSnapshot {
  int32_t max_sessions = 0;
  int32_t active = 0;
  int32_t queued = 0;
  int32_t max_queue = 0;
  double decode_tokens_per_second = 0;
  // Admission as Submit() would decide it now: no free session (a new request
  // would wait), and no room in the queue either (it would be refused).
  bool would_wait = false;
  bool full = false;
  // Expected wait for a new request to get a session (0 when one is free),
  // from the queue, the mean completion length and the measured decode rate.
  int64_t estimated_wait_ms = 0;
  // Prefix cache: tokens idle sessions hold for reuse, and prompt tokens
  // since start, of which `prompt_tokens_cached` came from the cache.
  bool prefix_cache = false;
  int64_t prefix_cache_tokens = 0;
  int64_t prompt_tokens = 0;
  int64_t prompt_tokens_cached = 0;
  // Pinned prefixes ready (in a slot or on disk), their tokens, and how
  // often one was read back from its file for a request.
  int32_t pinned_prompts = 0;
  int64_t pinned_tokens = 0;
  int64_t pinned_restores = 0;
};

class Scheduler {
 public:
  // Tokens a fill-in-the-middle prompt keeps around the gap (the prefix 3/4,
  // the suffix 1/4): llama-server's default batch, which bounds its /infill
  // the same way.
  static constexpr int32_t kInfillWindow = 2048;
  // The smallest prefill chunk a step budget leaves, so that a prompt still
  // advances when decoding alone fills the budget.
  static constexpr int32_t kMinBudgetChunk = 16;
  // A running request moves to close a hole only while it may still decode
  // at least this many tokens (a move copies its cells, and the hole's).
  static constexpr int32_t kMinMoveTokens = 16;
  // The least busy time a rate window closes on when the engine goes idle.
  static constexpr double kMinIdleRateWindow = 0.1;  // seconds

  // `stats` are this model's series (their registry and `clock` must outlive
  // the scheduler).
  Scheduler(std::unique_ptr<engine::Engine> engine, SchedulerOptions options, SchedulerStats stats,
            const util::Clock* clock = &util::RealClock());
  ~Scheduler();  // Stop()s
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Starts the engine thread. Call once (tests that use StepForTest() don't).
  void Start();
  // Finishes every request with Unavailable and joins the engine thread.
  void Stop();
  // Puts every pinned prefix (options.pinned) into an idle slot: read from
  // its file in pinned_dir when one was saved for this model, context and
  // prompt, else computed and saved there. Logs what it did and why a
  // prefix was skipped (too long, template refused, decode failed). Call
  // once, before Start() (tests: before StepForTest()).
  void WarmPinned();
  // The OTel GenAI server histograms for this model's requests (optional;
  // set before Start()).
  void SetGenAiStats(std::shared_ptr<telemetry::GenAiServerStats> stats) {
    genai_ = std::move(stats);
  }
  // Graceful shutdown, first half: new requests get Unavailable ("shutting
  // down"); those already accepted (queued or running) run to the end.
  void BeginDrain();
  // Liveness for the systemd watchdog: false when requests are active and
  // the engine loop has not finished a step for `max_step_ms`.
  bool Responsive(int64_t max_step_ms) const;

  // Fills req->prompt from `input` (chat template and tokenizer), adds the
  // chat format's stop strings, resolves unset sampling knobs against the
  // model's defaults, compiles a JSON response format into a grammar, bans
  // every end-of-generation token when ignore_eos, and checks token ids
  // against the vocabulary; a fill-in-the-middle input becomes the model's
  // FIM prompt. Errors: InvalidArgument naming "prompt", "suffix",
  // "prompt[i]", "logit_bias" or "response_format". Thread-safe.
  Status Prepare(const PromptInput& input, bool ignore_eos, GenerationRequest* req) const;

  // Whether a prepared request could ever run here: InvalidArgument naming
  // "prompt", "max_tokens" or "n" (prompt empty, prompt plus completion
  // longer than the session context — error code context_length_exceeded —,
  // more choices than sessions). Pure; thread-safe.
  Status CheckFits(const GenerationRequest& req) const;

  // Queues a prepared request; its results go to `sink`. Errors (the sink is
  // then not called): CheckFits's, ResourceExhausted with retry_after_s
  // (queue full), Unavailable (stopping). Thread-safe.
  Status Submit(GenerationRequest req, std::shared_ptr<GenerationSink> sink);

  SchedulerSnapshot Snapshot() const;  // thread-safe
  const SchedulerOptions& options() const { return options_; }
  // The engine's text side (tokenizer, vocabulary); thread-safe.
  const engine::Engine& engine() const { return *engine_; }

  // Test hook: one pass of the engine loop on the caller's thread (expire and
  // admit queued requests, drop cancelled ones, decode one batch, push
  // results). Returns false when nothing was active. REQUIRES: not Start()ed.
  bool StepForTest();

 private:
  enum class SlotState { kIdle, kPrefill, kFork, kWait, kDecode };

  // Prepare()'s prompt for a fill-in-the-middle request. Errors:
  // InvalidArgument naming "suffix" when the model has no FIM tokens.
  StatusOr<std::vector<engine::Token>> InfillPrompt(const engine::InfillInput& in,
                                                    int32_t max_tokens) const;

  // The choices of one request: one sink, one OnDone when all have ended.
  struct Group {
    std::shared_ptr<GenerationSink> sink;
    std::vector<size_t> slots;  // slot indices; [0] is the leader (prefills)
    int32_t remaining = 0;
    GenerationResult result;
    Status start_error;  // a sampler could not be set up: finish every choice
    util::Clock::TimePoint submitted;
    util::Clock::TimePoint first_token;  // of any choice; valid when has_first_token
    bool has_first_token = false;
    int32_t generated = 0;  // tokens of the choices that finished
    std::string operation;
    Priority priority = Priority::kInteractive;  // its admission class
    // Ended by PreemptBatch(): its caller runs it again, so it is no failure
    // (finish_reason "preempted"; no request duration, no gen_ai record).
    bool preempted = false;
  };

  struct Queued {
    GenerationRequest req;
    std::shared_ptr<GenerationSink> sink;
    util::Clock::TimePoint enqueued;
  };

  struct Slot {
    engine::SeqId seq = 0;
    SlotState state = SlotState::kIdle;
    GenerationRequest req;
    std::shared_ptr<GenerationSink> sink;
    std::shared_ptr<Group> group;
    int choice = 0;
    std::optional<StopMatcher> stop;
    std::optional<ThinkingCounter> thinking;  // usage.reasoning_tokens
    size_t n_prompt_done = 0;                 // prompt tokens already in the KV cache
    int32_t n_past = 0;                       // tokens in the KV cache
    int32_t n_generated = 0;
    double sum_logprob = 0;
    engine::Token last_token = 0;
    int32_t i_batch = -1;      // logits index in the current batch, or -1
    std::string utf8_pending;  // bytes of an incomplete UTF-8 character
    // The answer so far, kept only when its parser ends it at one call
    // (AnswerParser::OneCall()).
    std::string answer;
    std::vector<TokenInfo> logprobs_pending;  // top_logprobs: tokens of text not yet sent
    util::Clock::TimePoint submitted, last_token_at;
    // Tokens whose KV this sequence holds, by position (the prefix cache).
    std::vector<engine::Token> kv;
    std::string kv_scope;  // the cache_scope of the request that filled kv
    // DeferRestore(): the pinned_ prefix whose file the next step reads into
    // this slot (kv already names its first n_prompt_done tokens); -1 = none.
    int32_t restore_pin = -1;
    // A CopySequence() from or to this slot waits for the next Decode()
    // (the engine copies the KV data then): nothing may be written into its
    // cells before, so RestorePinned() computes instead.
    bool copy_pending = false;
    // kWait: the slot whose prompt prefill will hold `wait_match` of ours,
    // and that slot's group (the request it runs) when we started waiting.
    size_t wait_from = 0;
    int32_t wait_match = 0;
    std::shared_ptr<Group> wait_group;
    util::Clock::TimePoint cached_at;  // when an idle slot's cache was last used
    // Speculation: this step's guessed tokens and their batch indices (they
    // follow last_token at n_past, n_past + 1, ...), and this request's tally.
    std::vector<engine::Token> draft;
    std::vector<int32_t> draft_idx;
    int32_t spec_accepted = 0;
    int32_t spec_refused = 0;  // drafts ended by a wrong guess
    // A draft the plan left out, scored against the tokens sampled next as
    // if it had been verified, so that a sequence's acceptance is learned
    // while it does not guess (draft_plan.h).
    std::vector<engine::Token> shadow;
    size_t shadow_next = 0;
    // Where the slot stood before this step's batch was built (UndoStep()).
    size_t undo_kv = 0;
    size_t undo_prompt_done = 0;
    int32_t undo_n_past = 0;
  };

  // A prefix to reuse for a new prompt: `match` tokens held by slot `from`.
  struct Reuse {
    size_t from = 0;
    int32_t match = 0;
  };

  // A pinned prefix as WarmPinned() left it: its tokens, scope and file
  // (path "" when it could not be saved, or its file proved unreadable).
  struct Pinned {
    std::vector<engine::Token> tokens;
    std::string scope;
    std::string path;
  };

  void Loop();
  // Engine thread: expires old queued requests, drops cancelled ones and
  // moves the rest into idle slots. Returns the number of active slots.
  int32_t AdmitLocked() OUTPOST_REQUIRES(mu_);
  // Engine thread: sleeps until there is work; false when stopping.
  bool WaitForWork();
  // Engine thread: one decode step over the active slots.
  void Step();
  // Step(); when something in it throws (llama.cpp, a chat parser, an
  // allocation), every request in the step ends with that error (FailBatch)
  // and the loop goes on: one bad request never takes the server down.
  void GuardedStep();
  void BuildBatch(int32_t* n_decode, int32_t* n_prefill);
  // Engine thread: the batch-class tokens this step may carry (batch_yield_ms);
  // INT32_MAX while no user above the batch class is active.
  int32_t BatchRoom();
  // Engine thread: puts every slot back where it stood before BuildBatch()
  // (an interrupted step left nothing in the KV).
  void UndoStep();
  void HandleSampled(Slot& s, engine::Token tok, int32_t idx);
  // True if the answer's parser allows one call and s's answer, with
  // `piece` (the token's text) added, now holds it whole.
  bool EndsAtOneCall(Slot& s, const std::string& piece, bool special);
  // Engine thread: the longest cached prefix of `prompt` usable by a new
  // request (match 0 when none), and the n idle slots to run it in (the
  // holder first when it is idle).
  Reuse FindPrefix(const GenerationRequest& req) const;
  std::vector<size_t> PickIdle(size_t n, const Reuse& reuse) const;
  // How many runs of consecutive busy slots making idle slot i busy adds
  // (-1: it joins two, 0: it extends one, 1: a new run); the slots in
  // `also` count as busy.
  int32_t RunsAdded(size_t i, const std::vector<size_t>& also) const;
  // Whether idle slot a is a better pick than idle slot b (PickIdle()'s order).
  bool PreferIdle(size_t a, size_t b, const std::vector<size_t>& also) const;
  // Engine thread: a prompt being prefilled in another slot that will hold a
  // longer prefix of req's than `cached` (min_copied_prefix more); match 0
  // when none.
  Reuse FindPending(const GenerationRequest& req, const Reuse& cached) const;
  // Engine thread: a pinned prefix on disk that gives req at least
  // min_copied_prefix more tokens than `cached` (from = its index in
  // pinned_); match 0 when none.
  Reuse FindPinned(const GenerationRequest& req, const Reuse& cached) const;
  // Admission (under mu_): slot s starts from the first `keep` tokens of
  // pinned prefix `index`, to be read from its file by RestorePinned() before
  // the next batch — outside the lock, so a slow disk holds up no Submit().
  // Returns keep; until then s is no holder for others (FindPrefix()).
  int32_t DeferRestore(Slot& s, size_t index, int32_t keep);
  // Engine thread, first thing in a step: reads back what DeferRestore()
  // promised. A file that fails leaves the slot to compute its whole prompt
  // (cached_tokens 0) and is not tried again.
  void RestorePinned();
  // WarmPinned(): computes `tokens` into slot s (empty) in batch_size
  // chunks. False when a decode fails (s then holds nothing).
  bool PrefillDirect(Slot& s, const std::vector<engine::Token>& tokens);
  // Engine thread: moves waiting slots whose prefix is now decoded to
  // kPrefill with a copy of it (or from scratch when their holder is gone).
  void ResolveWaits();
  // Engine thread, before the batch is built: when the decoding slots form
  // more than one run of consecutive ids, moves the fewest of them (those
  // Movable()) into idle slots so that they form one (slot_moves.cc).
  void CompactRunning();
  // A decoding request that may still go on for kMinMoveTokens, with no
  // copy pending from or into its slot (Engine::CopyCells works at once).
  bool Movable(const Slot& s) const;
  // An idle slot whose cells may be replaced now: no pinned prefix promised
  // into it, no copy pending from or into it.
  bool Overwritable(const Slot& s) const;
  // Moves the request running in slot `from` to idle slot `to`; what `to`
  // caches is copied to idle slot `keep` first (SIZE_MAX: dropped). `from`
  // is left idle, caching the request's tokens so far (as the least recently
  // used cache: the request holds the same). If the engine cannot
  // copy, the request stays in `from` (and `to` holds nothing).
  void MoveRunning(size_t from, size_t to, size_t keep);
  // Engine thread: slot s starts from the first `keep` tokens of slot from's
  // KV (copied, or in place when s is from). Returns the tokens reused.
  int32_t StartFrom(Slot& s, size_t from, int32_t keep);
  // Engine thread: drops what slot s caches, keeping its first `keep` tokens.
  // False when the engine cannot cut there (the slot then holds nothing).
  bool TrimCache(Slot& s, int32_t keep);
  // Sends text (and, first, the log-probabilities of the tokens behind it).
  void Emit(Slot& s, std::string text);
  void Finish(Slot& s, FinishReason why, Status error = Status::Ok());
  void FailBatch(const Status& st);
  void DrainOnStop();
  int32_t RetryAfterLocked() const OUTPOST_REQUIRES(mu_);
  // Requests (not choices) in the queue, every class.
  size_t QueueLengthLocked() const OUTPOST_REQUIRES(mu_);
  // The queue to admit from next (nullptr when empty): see the header comment.
  std::deque<Queued>* NextQueueLocked() OUTPOST_REQUIRES(mu_);
  // Submit(): makes room for `needed` choices of class `cls` by displacing
  // queued requests of lower classes and, for a request that is not
  // patient, patient ones of its own class; false (nothing displaced) when
  // they hold too few.
  bool DisplaceLowerLocked(int cls, bool patient, int32_t needed) OUTPOST_REQUIRES(mu_);
  // A request that waits longer than max_queue_wait (its own
  // max_queue_wait_ms): a background response, which gives its queue place
  // to a request a client is waiting on.
  bool PatientLocked(const GenerationRequest& req) const OUTPOST_REQUIRES(mu_) {
    return req.max_queue_wait_ms > options_.max_queue_wait_ms;
  }
  // Engine thread, before a step: when the request admission takes next is
  // of a class above batch and too few sessions are idle for it, ends
  // running batch-class requests (newest first) with a 503 "preempted" and
  // Retry-After, so batch work fills idle capacity and never holds a session
  // an interactive request waits for. The batch runner runs them again.
  // True when it ended any.
  bool PreemptBatch();
  // Engine thread, after BuildBatch: adds guessed tokens for the decoding
  // sequences when speculation pays (see SchedulerOptions::spec_draft_max).
  void AddDrafts(int32_t n_decode, int32_t n_prefill);
  // Engine thread, after s sampled `tok` at its last token: the guesses it
  // confirms, each sampled in turn until one differs or the request ends;
  // the cells of refused guesses are dropped. Returns the tokens sampled.
  int32_t VerifyDrafts(Slot& s, engine::Token tok);
  // Engine thread, after s sampled `tok` in a step without guesses of its
  // own: scores its shadow draft's next guess.
  void ScoreShadow(Slot& s, engine::Token tok);
  // Adds guesses that came true and whether a wrong one ended a draft to
  // the tally of all sequences.
  void TallyGuesses(size_t accepted, bool refused);
  // What a guess of a sequence without a record of its own is expected to
  // do: the recent guesses of all sequences (see Acceptance()).
  double SpecPrior() const;
  double WaitSecondsLocked() const OUTPOST_REQUIRES(mu_);
  // Engine thread, after each step: adds the step to the rate window and
  // publishes the decode and prefill rates when the window holds a busy
  // second, or, when `idle` (no slot is busy after the step), at least
  // kMinIdleRateWindow of busy time: a short burst still reports its rate.
  void UpdateRate(int32_t n_sampled, int32_t n_prefill, util::Clock::Duration step, bool idle);
  // Engine thread: learns the step cost model from one step; PrefillChunk()
  // is what the next step may prefill while others decode.
  void LearnStepCost(int32_t n_decode, int32_t n_prefill, util::Clock::Duration step);
  int32_t PrefillChunk() const;

  // Const after construction.
  const std::unique_ptr<engine::Engine> engine_;
  const SchedulerOptions options_;
  const SchedulerStats stats_;
  const util::Clock* const clock_;
  std::shared_ptr<telemetry::GenAiServerStats> genai_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Queued> queue_[kPriorityClasses] OUTPOST_GUARDED_BY(mu_);  // by Priority
  bool stopping_ OUTPOST_GUARDED_BY(mu_) = false;
  bool draining_ OUTPOST_GUARDED_BY(mu_) = false;
  // When the engine loop last began or ended a step (clock ticks), for Responsive().
  std::atomic<int64_t> loop_progress_{0};
  int32_t active_ OUTPOST_GUARDED_BY(mu_) = 0;                  // busy slots
  int32_t queued_choices_ OUTPOST_GUARDED_BY(mu_) = 0;          // sessions the queue will need
  double mean_completion_tokens_ OUTPOST_GUARDED_BY(mu_) = 64;  // EMA over finished requests
  double decode_tps_ OUTPOST_GUARDED_BY(mu_) = 0;               // EMA, aggregate over all sequences
  std::atomic<int64_t> prompt_tokens_{0};                       // admitted, since start
  std::atomic<int64_t> prompt_tokens_cached_{0};                // of those, from the cache
  std::atomic<int64_t> cache_tokens_{0};                        // held by idle slots
  std::atomic<int64_t> pinned_restores_{0};                     // RestorePinned() successes
  std::atomic<int32_t> pinned_ready_{0};                        // WarmPinned(): usable prefixes
  std::atomic<int64_t> pinned_tokens_{0};                       // and their tokens

  // Engine thread only (and WarmPinned() before it starts); pinned_ is not
  // resized after WarmPinned().
  std::vector<Slot> slots_;
  std::vector<Pinned> pinned_;
  // Step(): the slots sampled this step, their sequences, batch rows and
  // tokens (kept to reuse their memory).
  std::vector<size_t> sample_slots_;
  std::vector<engine::SeqId> sample_seqs_;
  std::vector<int32_t> sample_idx_;
  std::vector<engine::Token> sample_out_;
  util::Clock::Duration rate_window_busy_{};
  int64_t rate_window_tokens_ = 0;
  int64_t rate_window_prefill_ = 0;
  double prefill_tps_ = 0;  // EMA, the engine thread only
  // Speculation: what passes of decode-only steps cost by their rows, and the guesses
  // of all sequences, confirmed and refused (halved as they grow) — how many
  // guesses a step carries (draft_plan.h). AddDrafts() scratch beside them.
  StepCostTable spec_costs_;
  double spec_accepted_all_ = 0;
  double spec_refused_all_ = 0;
  std::vector<size_t> draft_slots_;
  std::vector<DraftCandidate> draft_candidates_;
  std::vector<int32_t> step_tokens_;  // this step's tokens by sequence
  // The step cost model (step_budget_ms): EMAs of a decode-only step's time
  // and of the time one prompt token adds to a step; 0 = not measured yet.
  double decode_step_ms_ = 0;
  double prefill_token_ms_ = 0;
  // When a request above the batch class last held a slot (batch_yield_ms).
  std::optional<util::Clock::TimePoint> interactive_seen_;
  // Set by Submit() for a request above the batch class; cleared as a step
  // begins (that step admits it). A step of batch-class work only is
  // decoded interruptibly and cut short when it is set (batch_yield_ms > 0).
  std::atomic<bool> interrupt_{false};
  std::thread thread_;
};

}  // namespace outpost::scheduler

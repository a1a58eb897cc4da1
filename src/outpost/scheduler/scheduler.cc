#include "outpost/scheduler/scheduler.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <limits>

#include "outpost/engine/grammar_limits.h"
#include "outpost/engine/kv_layout.h"
#include "outpost/engine/thinking_grammar.h"
#include "outpost/engine/token_id.h"
#include "outpost/util/status_macros.h"
#include "outpost/util/utf8.h"

namespace outpost::scheduler {

using util::Seconds;

Scheduler::Scheduler(std::unique_ptr<engine::Engine> engine, SchedulerOptions options,
                     SchedulerStats stats, const util::Clock* clock)
    : engine_(std::move(engine)),
      options_(options),
      stats_(stats),
      clock_(clock),
      spec_costs_(options_.batch_size) {
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
  thread_ = std::thread([this] {
    // Named for `top -H` and /proc/<pid>/task/*/comm; llama.cpp's OpenMP
    // workers, made by this thread at its first decode, inherit the name.
    pthread_setname_np(pthread_self(), "outpost-engine");
    Loop();
  });
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
  std::vector<bool> banned;
  int32_t n_banned = 0;
  for (const auto& [tok, bias] : req->sampling.logit_bias) {
    OUTPOST_RETURN_IF_ERROR(engine::CheckTokenId(tok, n_vocab, "logit_bias"));
    if (bias > -100.0f) continue;
    if (banned.empty()) banned.assign(static_cast<size_t>(n_vocab), false);
    if (!banned[static_cast<size_t>(tok)]) ++n_banned;
    banned[static_cast<size_t>(tok)] = true;
  }
  if (n_banned == n_vocab) {
    return Status::InvalidArgument("'logit_bias' bans every token of the vocabulary (" +
                                       std::to_string(n_vocab) + "): nothing could be generated",
                                   "logit_bias");
  }
  engine::ChatPrompt chat;
  if (in.chat) {
    if (in.tools && !e.NativeToolCalls()) {
      return Status::InvalidArgument("the model's chat template has no tool-call format", "tools");
    }
    auto rendered = e.ApplyChatTemplate(in.messages, in.tools ? &*in.tools : nullptr, in.options);
    if (!rendered.ok()) return rendered.status();
    chat = std::move(rendered).value();
    req->prompt = e.Tokenize(chat.text, /*add_special=*/true, /*parse_special=*/true);
    for (auto& s : chat.stops) req->stop.push_back(std::move(s));
  } else if (in.infill) {
    OUTPOST_ASSIGN_OR_RETURN(req->prompt, InfillPrompt(*in.infill, req->max_tokens));
  } else if (!in.tokens.empty()) {
    for (size_t i = 0; i < in.tokens.size(); ++i) {
      OUTPOST_RETURN_IF_ERROR(
          engine::CheckTokenId(in.tokens[i], n_vocab, "prompt[" + std::to_string(i) + "]"));
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
      // A model that thinks first: the format applies after its thinking.
      if (!chat.thinking.end.empty()) {
        req->sampling.grammar = engine::GrammarAfterThinking(req->sampling.grammar, chat.thinking);
      }
      break;
    }
    case engine::ResponseFormat::Type::kGrammar: {
      Status st = e.CheckGrammar(in.response_format.grammar, "grammar");
      if (!st.ok()) return st;
      req->sampling.grammar = in.response_format.grammar;
      if (!chat.thinking.end.empty()) {
        req->sampling.grammar = engine::GrammarAfterThinking(req->sampling.grammar, chat.thinking);
      }
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
  req->sampling.thinking = std::move(chat.thinking);
  if (ignore_eos) {
    for (engine::Token t : e.EndOfGenerationTokens())
      req->sampling.logit_bias.emplace_back(t, -100.0f);
  }
  return Status::Ok();
}

StatusOr<std::vector<engine::Token>> Scheduler::InfillPrompt(const engine::InfillInput& in,
                                                             int32_t max_tokens) const {
  const engine::Engine& e = *engine_;
  const engine::InfillTokens& fim = e.Infill();
  // Nothing around the gap but the text before it: a plain completion is
  // the same request, and any model can answer that.
  if (!fim.supported() && in.suffix.empty() && in.prompt.empty() && in.extra.empty()) {
    return e.Tokenize(in.prefix, /*add_special=*/true, /*parse_special=*/true);
  }
  if (!fim.supported()) {
    return Status::InvalidArgument(
        "this model cannot fill in the middle: its GGUF names no fill-in-the-middle tokens "
        "(fim_pre, fim_suf, fim_mid); serve a code model trained for it (Qwen2.5-Coder, "
        "CodeLlama, StarCoder 2, DeepSeek-Coder, ...)",
        "suffix");
  }
  // llama-server's bounds with its default batch of 2048: the gap's
  // surroundings within one such window, the other files in what is left of
  // the context after room for the answer.
  const int32_t window = std::min(kInfillWindow, options_.ctx_per_session);
  const int32_t room = options_.ctx_per_session - window - 2 * std::max(0, max_tokens);
  return engine::BuildInfillPrompt(fim, in, window, room,
                                   [&e](std::string_view text, bool special) {
                                     return e.Tokenize(text, /*add_special=*/false, special);
                                   });
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
  GuardedStep();
  return true;
}

void Scheduler::GuardedStep() {
  try {
    Step();
  } catch (const std::exception& e) {
    spdlog::error("engine step failed: {}; the requests in it end with this error", e.what());
    FailBatch(Status::Internal(e.what()));
  }
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
  // Beside active users, batch work is rationed (batch_yield_ms); decoding
  // sequences take the ration first, in slot order, then prompts.
  int32_t batch_room = BatchRoom();
  for (auto& s : slots_) {
    s.undo_kv = s.kv.size();
    s.undo_prompt_done = s.n_prompt_done;
    s.undo_n_past = s.n_past;
  }
  for (auto& s : slots_) {
    s.i_batch = -1;
    s.draft.clear();
    s.draft_idx.clear();
    if (s.state != SlotState::kDecode || sits_out(s)) continue;
    if (s.req.priority == Priority::kBatch) {
      if (batch_room <= 0) continue;
      --batch_room;
    }
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
    int32_t take = static_cast<int32_t>(std::min<size_t>(remaining, static_cast<size_t>(budget)));
    if (s.req.priority == Priority::kBatch) {
      take = std::min(take, batch_room);
      if (take <= 0) continue;
      batch_room -= take;
    }
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

int32_t Scheduler::BatchRoom() {
  constexpr int32_t kUnlimited = std::numeric_limits<int32_t>::max();
  if (options_.batch_yield_ms <= 0) return kUnlimited;
  const auto now = clock_->Now();
  for (const auto& s : slots_) {
    if (s.state != SlotState::kIdle && s.req.priority != Priority::kBatch) interactive_seen_ = now;
  }
  if (!interactive_seen_ ||
      now - *interactive_seen_ >= std::chrono::milliseconds(options_.batch_yield_ms)) {
    return kUnlimited;
  }
  return options_.batch_busy_tokens;
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
    GuardedStep();
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

void Scheduler::UndoStep() {
  for (auto& s : slots_) {
    s.kv.resize(s.undo_kv);
    s.n_prompt_done = s.undo_prompt_done;
    s.n_past = s.undo_n_past;
    s.i_batch = -1;
    s.draft.clear();
    s.draft_idx.clear();
  }
}

void Scheduler::Step() {
  // A request above the batch class that arrived since the last admission
  // takes an idle session in this step.
  if (interrupt_.exchange(false, std::memory_order_relaxed)) {
    std::lock_guard<std::mutex> lock(mu_);
    AdmitLocked();
  }
  if (PreemptBatch()) {
    // The freed sessions go to the waiting request in this step, not the next.
    std::lock_guard<std::mutex> lock(mu_);
    AdmitLocked();
  }
  RestorePinned();  // what admission promised from pinned prefixes' files
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
  CompactRunning();
  int32_t n_decode = 0, n_prefill = 0;
  BuildBatch(&n_decode, &n_prefill);
  AddDrafts(n_decode, n_prefill);
  if (engine_->BatchSize() == 0) return;

  bool batch_only = true;
  step_tokens_.resize(slots_.size());
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    step_tokens_[i] = static_cast<int32_t>(s.kv.size() - s.undo_kv + s.draft.size());
    if (step_tokens_[i] > 0 && s.req.priority != Priority::kBatch) batch_only = false;
  }
  // The passes of the model this step takes (Engine::Decode).
  const std::vector<int32_t> passes = engine::BatchPasses(step_tokens_);
  const int32_t rows = engine_->BatchSize();
  const auto step_start = clock_->Now();
  const bool interruptible = options_.batch_yield_ms > 0 && batch_only;
  const Status st = interruptible ? engine_->DecodeInterruptible(interrupt_) : engine_->Decode();
  const auto decode_time = clock_->Now() - step_start;
  for (auto& s : slots_) s.copy_pending = false;  // the decode made every pending copy
  if (interruptible && st.code() == StatusCode::kCancelled) {
    // A higher class arrived: this step's batch work is undone and redone
    // later; the next step admits the newcomer.
    UndoStep();
    stats_.batch_steps_interrupted.Add();
    return;
  }
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
      s.copy_pending = f.copy_pending = true;
      f.kv = s.kv;
      f.n_past = s.n_past;
      f.n_prompt_done = f.req.prompt.size();
      f.i_batch = s.i_batch;
    }
  }
  // Every sequence's next token at once (the engine may sample them in
  // parallel), then each is handled in slot order.
  sample_slots_.clear();
  sample_seqs_.clear();
  sample_idx_.clear();
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].i_batch < 0) continue;
    sample_slots_.push_back(i);
    sample_seqs_.push_back(slots_[i].seq);
    sample_idx_.push_back(slots_[i].i_batch);
  }
  sample_out_.resize(sample_slots_.size());
  engine_->SampleMany(sample_seqs_, sample_idx_, sample_out_);
  int32_t n_sampled = 0;
  for (size_t k = 0; k < sample_slots_.size(); ++k) {
    Slot& s = slots_[sample_slots_[k]];
    if (s.i_batch < 0) continue;  // finished while an earlier slot was handled
    const engine::Token tok = sample_out_[k];
    s.state = SlotState::kDecode;
    HandleSampled(s, tok, s.i_batch);
    ++n_sampled;
    if (!s.draft.empty()) {
      n_sampled += VerifyDrafts(s, tok);
    } else if (!s.shadow.empty()) {
      ScoreShadow(s, tok);
    }
  }
  const auto step_time = clock_->Now() - step_start;
  uint64_t held = 0, cached = 0;
  bool idle = true;  // no slot busy after this step
  for (const auto& s : slots_) {
    held += s.kv.size();
    if (s.state == SlotState::kIdle) {
      cached += s.kv.size();
    } else {
      idle = false;
    }
  }
  UpdateRate(n_sampled, n_prefill, step_time, idle);
  LearnStepCost(n_decode, n_prefill, step_time);
  // llama.cpp's own time for the rows: sampling and handing out a token
  // cost the same whether it was guessed or not.
  if (n_prefill == 0 && passes.size() == 1) spec_costs_.Observe(rows, Seconds(decode_time));
  spdlog::trace(
      "step: {} decode + {} guessed + {} prefill tokens in {} passes, {} sampled, "
      "{:.1f} ms (decode {:.1f} ms)",
      n_decode, rows - n_decode - n_prefill, n_prefill, passes.size(), n_sampled,
      Seconds(step_time) * 1000, Seconds(decode_time) * 1000);
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
  if (tok == engine::kGrammarTooAmbiguous) {
    Finish(s, FinishReason::kError,
           Status::InvalidArgument(
               "the request's output constraint (response_format, tools or grammar) became too "
               "ambiguous to follow after " +
               std::to_string(s.n_generated) +
               " generated tokens: the text so far matched it in more than " +
               std::to_string(engine::kMaxGrammarStacks) +
               " ways at once, or the next token took more than " +
               std::to_string(engine::kMaxGrammarStackWork) +
               " parse steps; write each choice so that its first characters decide it"));
    return;
  }
  if (tok == engine::kNoToken) {
    // What was generated stays with the client; the answer cannot go on.
    Finish(s, FinishReason::kError,
           Status::InvalidArgument(
               "no token satisfies the request's output constraint after " +
               std::to_string(s.n_generated) +
               " generated tokens: the grammar (response_format, tools or grammar) allows "
               "nothing more, with logit_bias (an end-of-generation token only where the "
               "grammar is complete)"));
    return;
  }
  const auto now = clock_->Now();
  // Batch lines stay out of the latency histograms (see admission.cc).
  const bool interactive = s.req.priority != Priority::kBatch;
  if (s.n_generated == 0) {
    if (interactive) stats_.time_to_first_token.Observe(Seconds(now - s.submitted));
    if (s.group && !s.group->has_first_token) {
      s.group->has_first_token = true;
      s.group->first_token = now;
    }
  } else if (interactive) {
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
  const std::string piece = engine_->TokenPiece(tok, special);
  s.thinking->Add(piece);
  s.utf8_pending += piece;
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
  if (EndsAtOneCall(s, whole, special)) {
    Finish(s, FinishReason::kStop);
    return;
  }
  if (at_max || ctx_full) Finish(s, FinishReason::kLength);
}

bool Scheduler::EndsAtOneCall(Slot& s, const std::string& piece, bool special) {
  const auto& parser = s.req.answer_parser;
  if (parser == nullptr || !parser->OneCall()) return false;
  s.answer += piece;
  // A call ends on a delimiter or a special token, never inside a word: the
  // whole-answer parse runs only on those tokens.
  const bool delimiter = std::any_of(piece.begin(), piece.end(), [](char c) {
    return std::ispunct(static_cast<unsigned char>(c)) != 0;
  });
  return (special || delimiter) && parser->Ended(s.answer);
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
  g->result.usage.reasoning_tokens += s.thinking ? s.thinking->tokens() : 0;
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
    stats_.finished.With({g->preempted ? "preempted" : FinishReasonName(finish)}).Add();
    g->sink->OnDone(std::move(r));
    const double duration = Seconds(clock_->Now() - g->submitted);
    if (!g->preempted && g->priority != Priority::kBatch) stats_.request_duration.Observe(duration);
    if (genai_ && !g->preempted) {
      const int32_t choices = static_cast<int32_t>(g->slots.size());
      genai_->Record(g->operation, PriorityName(g->priority), duration,
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

void Scheduler::FailBatch(const Status& st) {
  for (auto& s : slots_) {
    if (s.state == SlotState::kIdle) continue;
    Finish(s, FinishReason::kError, Status::Internal("inference failed: " + st.message()));
  }
}

}  // namespace outpost::scheduler

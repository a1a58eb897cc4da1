// Scheduler speculation (scheduler.h), engine thread: n-gram guesses added
// to a step for the decoding sequences, and their verification.
//
// A guess is verified by sampling: the sequence samples its next token from
// the logits after its last token as always; while that equals the first
// guess, the guess's cell is already the right KV and the token after it is
// sampled from the guess's logits, and so on. Every sampled token goes
// through the sampler in order, so the output is what plain decoding gives
// (exactly so under greedy decoding); only the number of steps changes.
#include <algorithm>

#include "outpost/scheduler/ngram_draft.h"
#include "outpost/scheduler/scheduler.h"

namespace outpost::scheduler {
namespace {

// After this many guesses, a request whose guesses are confirmed less often
// than kMinAcceptance stops guessing: its extra rows cost more than they save.
constexpr int32_t kJudgeAfter = 16;
constexpr double kMinAcceptance = 0.25;

}  // namespace

void Scheduler::AddDrafts(int32_t n_decode, int32_t n_prefill) {
  if (options_.spec_draft_max <= 0 || n_decode == 0 || n_prefill > 0 ||
      n_decode > options_.spec_max_batch) {
    return;
  }
  // A sliding-window cache cannot always cut refused guesses back out.
  if (engine_->SlidingWindow() > 0) return;
  int32_t room = options_.batch_size - engine_->BatchSize();
  for (auto& s : slots_) {
    if (s.state != SlotState::kDecode || s.i_batch < 0 || room <= 0) continue;
    if (s.req.priority == Priority::kBatch) continue;
    if (s.spec_drafted >= kJudgeAfter &&
        s.spec_accepted < kMinAcceptance * static_cast<double>(s.spec_drafted)) {
      continue;
    }
    // Guesses stay inside the session and within max_tokens (the token
    // sampled after the last guess is one more).
    int32_t k = std::min(options_.spec_draft_max, room);
    k = std::min(k, options_.ctx_per_session - s.n_past - 2);
    if (s.req.max_tokens > 0) k = std::min(k, s.req.max_tokens - s.n_generated - 1);
    if (k <= 0) continue;
    s.draft = NgramDraft(s.kv, k);
    for (size_t j = 0; j < s.draft.size(); ++j) {
      s.draft_idx.push_back(
          engine_->Add(s.draft[j], s.n_past + static_cast<int32_t>(j), s.seq, true));
    }
    room -= static_cast<int32_t>(s.draft.size());
    s.spec_drafted += static_cast<int32_t>(s.draft.size());
    stats_.spec_drafted.Add(s.draft.size());
  }
}

int32_t Scheduler::VerifyDrafts(Slot& s, engine::Token tok) {
  const std::vector<engine::Token> draft = std::move(s.draft);
  const std::vector<int32_t> idx = std::move(s.draft_idx);
  s.draft.clear();
  s.draft_idx.clear();
  const engine::SeqId seq = s.seq;
  int32_t sampled = 0;
  size_t used = 0;
  for (; used < draft.size(); ++used) {
    // The request ended (stop, length, end of generation) or the guess was wrong.
    if (s.state != SlotState::kDecode || tok != draft[used]) break;
    // The guess is the token just sampled: its cell holds the right KV.
    s.kv.push_back(draft[used]);
    ++s.n_past;
    ++s.spec_accepted;
    stats_.spec_accepted.Add();
    tok = engine_->Sample(seq, idx[used]);
    HandleSampled(s, tok, idx[used]);
    ++sampled;
  }
  // Cells of refused guesses go, whether the request runs on or its slot
  // keeps its KV as a cache (a finished request that freed it has none).
  if (used < draft.size()) engine_->TrimSequence(seq, static_cast<int32_t>(s.kv.size()));
  return sampled;
}

}  // namespace outpost::scheduler

// Scheduler speculation (scheduler.h), engine thread: n-gram guesses added
// to a step for the decoding sequences, and their verification.
//
// How many guesses a step carries: draft_plan.h.
//
// A guess is verified by sampling: the sequence samples its next token from
// the logits after its last token as always; while that equals the first
// guess, the guess's cell is already the right KV and the token after it is
// sampled from the guess's logits, and so on. Every sampled token goes
// through the sampler in order, so the output is what plain decoding gives
// (exactly so under greedy decoding); only the number of steps changes.
#include <algorithm>
#include <vector>

#include "outpost/scheduler/ngram_draft.h"
#include "outpost/scheduler/scheduler.h"

namespace outpost::scheduler {
namespace {

// The guesses of all sequences are tallied over about this many outcomes.
constexpr double kSpecTally = 1000;

}  // namespace

void Scheduler::AddDrafts(int32_t n_decode, int32_t n_prefill) {
  if (options_.spec_draft_max <= 0 || n_decode == 0 || n_prefill > 0 ||
      n_decode > options_.spec_max_batch) {
    return;
  }
  // A sliding-window cache cannot always cut refused guesses back out.
  if (engine_->SlidingWindow() > 0) return;
  int32_t room = options_.batch_size - engine_->BatchSize();
  draft_slots_.clear();
  draft_candidates_.clear();
  step_tokens_.resize(slots_.size());
  for (size_t i = 0; i < slots_.size(); ++i) {
    step_tokens_[i] = static_cast<int32_t>(slots_[i].kv.size() - slots_[i].undo_kv);
  }
  const double prior = SpecPrior();
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& s = slots_[i];
    if (s.state != SlotState::kDecode || s.i_batch < 0 || room <= 0) continue;
    if (s.req.priority == Priority::kBatch) continue;
    // Guesses stay inside the session and within max_tokens (the token
    // sampled after the last guess is one more).
    int32_t k = std::min(options_.spec_draft_max, room);
    k = std::min(k, options_.ctx_per_session - s.n_past - 2);
    if (s.req.max_tokens > 0) k = std::min(k, s.req.max_tokens - s.n_generated - 1);
    if (k <= 0) continue;
    s.draft = NgramDraft(s.kv, k);
    if (s.draft.empty()) continue;
    room -= static_cast<int32_t>(s.draft.size());
    draft_slots_.push_back(i);
    draft_candidates_.push_back({i, static_cast<int32_t>(s.draft.size()),
                                 Acceptance(s.spec_accepted, s.spec_refused, prior)});
  }
  if (draft_slots_.empty()) return;
  const std::vector<int32_t> keep = PlanDrafts(step_tokens_, draft_candidates_, spec_costs_);
  for (size_t k = 0; k < draft_slots_.size(); ++k) {
    Slot& s = slots_[draft_slots_[k]];
    if (keep[k] == 0 && s.shadow.empty()) {
      s.shadow = std::move(s.draft);
      s.shadow_next = 0;
    } else if (keep[k] > 0) {
      s.shadow.clear();
    }
    s.draft.resize(static_cast<size_t>(keep[k]));
    for (size_t j = 0; j < s.draft.size(); ++j) {
      s.draft_idx.push_back(
          engine_->Add(s.draft[j], s.n_past + static_cast<int32_t>(j), s.seq, true));
    }
    stats_.spec_drafted.Add(s.draft.size());
  }
}

void Scheduler::ScoreShadow(Slot& s, engine::Token tok) {
  const bool right = s.shadow[s.shadow_next] == tok;
  if (right) ++s.spec_accepted;
  if (!right) ++s.spec_refused;
  TallyGuesses(right ? 1 : 0, !right);
  if (right && ++s.shadow_next < s.shadow.size()) return;
  s.shadow.clear();
  s.shadow_next = 0;
}

void Scheduler::TallyGuesses(size_t accepted, bool refused) {
  spec_accepted_all_ += static_cast<double>(accepted);
  spec_refused_all_ += refused ? 1 : 0;
  if (spec_accepted_all_ + spec_refused_all_ > kSpecTally) {
    spec_accepted_all_ /= 2;
    spec_refused_all_ /= 2;
  }
}

double Scheduler::SpecPrior() const {
  return (spec_accepted_all_ + 1) / (spec_accepted_all_ + spec_refused_all_ + 2);
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
  // A draft ended by a wrong guess (not by the request ending) counts
  // against the sequence; the tally of all sequences is halved as it grows
  // so that it follows the traffic.
  const bool refused = used < draft.size() && s.state == SlotState::kDecode;
  if (refused) ++s.spec_refused;
  TallyGuesses(used, refused);
  // Cells of refused guesses go, whether the request runs on or its slot
  // keeps its KV as a cache (a finished request that freed it has none).
  if (used < draft.size()) engine_->TrimSequence(seq, static_cast<int32_t>(s.kv.size()));
  return sampled;
}

}  // namespace outpost::scheduler

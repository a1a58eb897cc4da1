// Scheduler prefix reuse (scheduler.h), engine thread: finding the longest
// cached or pending prompt prefix for a new request, copying or waiting for
// it, picking the idle slots to hold it and trimming what they cache.
#include "outpost/scheduler/scheduler.h"

#include <algorithm>

namespace outpost::scheduler {

Scheduler::Reuse Scheduler::FindPrefix(const GenerationRequest& req) const {
  const std::vector<engine::Token>& prompt = req.prompt;
  if (prompt.size() < 2) return Reuse{};
  // The last prompt token is always computed: its logits start the answer.
  const size_t limit = prompt.size() - 1;
  const int32_t window = engine_->SlidingWindow();
  Reuse in_place_best, copy_best;  // an idle holder is cut in place; a busy one is copied
  // Idle holders with their match and the runs running there would add.
  struct Held {
    size_t i;
    int32_t match, runs;
  };
  std::vector<Held> idle;
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (s.kv.empty() || s.state == SlotState::kFork || s.restore_pin >= 0 ||
        s.kv_scope != req.cache_scope) {
      continue;
    }
    const size_t end = std::min(limit, s.kv.size());
    size_t m = 0;
    while (m < end && s.kv[m] == prompt[m]) ++m;
    // Sliding-window layers drop cells that fall out of every window: the
    // holder must still have the window before the cut (llama-server's rule).
    if (window > 0 && engine_->SequencePosMin(s.seq) > std::max<int32_t>(0, m - window)) continue;
    if (m == 0) continue;
    const auto match = static_cast<int32_t>(m);
    if (s.state == SlotState::kIdle) {
      idle.push_back({i, match, RunsAdded(i, {})});
      if (match > in_place_best.match) in_place_best = Reuse{i, match};
    } else if (match > copy_best.match) {
      copy_best = Reuse{i, match};
    }
  }
  // Among idle holders within min_copied_prefix tokens of the longest (what
  // a copy would have to save), the one that keeps the running sequences in
  // the fewest runs (PickIdle()), then the longest: a holder next to them
  // runs in place where the longest, away from them, would be copied.
  const int32_t longest = in_place_best.match;
  int32_t best_runs = 2;  // above any RunsAdded()
  for (const Held& h : idle) {
    if (h.match + options_.min_copied_prefix <= longest) continue;
    if (h.runs < best_runs || (h.runs == best_runs && h.match > in_place_best.match)) {
      best_runs = h.runs;
      in_place_best = Reuse{h.i, h.match};
    }
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
    slots_[from].copy_pending = true;
    s.copy_pending = true;
    s.kv = holder.kv;
  }
  if (!TrimCache(s, keep)) return 0;
  stats_.prompt_tokens_cached.Add(static_cast<uint64_t>(keep));
  prompt_tokens_cached_ += keep;
  return keep;
}

int32_t Scheduler::RunsAdded(size_t i, const std::vector<size_t>& also) const {
  const auto busy = [&](size_t j) {
    return slots_[j].state != SlotState::kIdle ||
           std::find(also.begin(), also.end(), j) != also.end();
  };
  const bool left = i > 0 && busy(i - 1);
  const bool right = i + 1 < slots_.size() && busy(i + 1);
  return 1 - (left ? 1 : 0) - (right ? 1 : 0);
}

bool Scheduler::PreferIdle(size_t a, size_t b, const std::vector<size_t>& also) const {
  const int32_t runs_a = RunsAdded(a, also), runs_b = RunsAdded(b, also);
  if (runs_a != runs_b) return runs_a < runs_b;
  const Slot& x = slots_[a];
  const Slot& y = slots_[b];
  if (x.kv.empty() != y.kv.empty()) return x.kv.empty();
  return !x.kv.empty() && x.cached_at < y.cached_at;
}

std::vector<size_t> Scheduler::PickIdle(size_t n, const Reuse& reuse) const {
  std::vector<size_t> picked;
  // The idle holder of the prefix runs it in place unless another idle slot
  // keeps the running sequences in fewer runs; then the admission copies
  // the prefix there, or skips a short one (min_copied_prefix).
  bool in_place = reuse.match > 0 && slots_[reuse.from].state == SlotState::kIdle;
  if (in_place) {
    const int32_t runs = RunsAdded(reuse.from, {});
    for (size_t i = 0; i < slots_.size() && in_place; ++i) {
      in_place = slots_[i].state != SlotState::kIdle || RunsAdded(i, {}) >= runs;
    }
  }
  if (in_place) picked.push_back(reuse.from);
  // One at a time: the slot that keeps the running sequences in the fewest
  // runs of consecutive ids (each run is its own pass over the weights in
  // the engine; engine.h), then an empty one, then the least recently used
  // cache.
  while (picked.size() < n) {
    size_t best = slots_.size();
    for (size_t i = 0; i < slots_.size(); ++i) {
      if (slots_[i].state != SlotState::kIdle) continue;
      if (std::find(picked.begin(), picked.end(), i) != picked.end()) continue;
      if (best == slots_.size() || PreferIdle(i, best, picked)) best = i;
    }
    if (best == slots_.size()) break;
    picked.push_back(best);
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

}  // namespace outpost::scheduler

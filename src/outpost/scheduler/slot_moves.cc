// Scheduler slot moves (scheduler.h), engine thread: keeping the decoding
// sequences on consecutive slots. A request that finishes between running
// ones leaves a hole, and each run of consecutive sequence ids is a pass of
// its own over the weights (Engine::Decode) until an arrival fills it;
// MoveRunning() closes the hole by moving a running request into it: a copy
// of the cells it holds (Engine::MoveSequence), not of its whole KV stream.
#include "outpost/scheduler/scheduler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>

namespace outpost::scheduler {
namespace {

constexpr size_t kNone = std::numeric_limits<size_t>::max();

}  // namespace

bool Scheduler::Overwritable(const Slot& s) const {
  return s.state == SlotState::kIdle && s.restore_pin < 0 && !s.copy_pending;
}

bool Scheduler::Movable(const Slot& s) const {
  if (s.state != SlotState::kDecode || s.copy_pending) return false;
  // What is left of the request, at most: a move costs a copy of its cells
  // (for the hole's cache too), so one about to end stays where it is.
  const int32_t left_in_context = options_.ctx_per_session - s.n_past;
  const int32_t left = s.req.max_tokens < 0
                           ? left_in_context
                           : std::min(left_in_context, s.req.max_tokens - s.n_generated);
  return left >= kMinMoveTokens;
}

void Scheduler::CompactRunning() {
  if (!options_.move_running) return;
  const size_t n = slots_.size();
  size_t k = 0, lo = n, hi = 0;  // decoding slots, the first and the last
  for (size_t i = 0; i < n; ++i) {
    if (slots_[i].state != SlotState::kDecode) continue;
    ++k;
    lo = std::min(lo, i);
    hi = i;
  }
  if (k < 2 || hi - lo + 1 == k) return;  // one run already (every step: no allocation)
  // The window of k consecutive slots that needs the fewest moves: every
  // slot in it decodes already or is idle (a prompt being prefilled stays
  // put: its slot has a step of its own until it decodes), and every
  // decoding slot outside it can move.
  size_t best = kNone, best_moves = k;
  for (size_t w = 0; w + k <= n; ++w) {
    size_t moves = 0;
    bool ok = true;
    for (size_t i = 0; i < n && ok; ++i) {
      const Slot& s = slots_[i];
      if (i >= w && i < w + k) {
        ok = s.state == SlotState::kDecode || Overwritable(s);
      } else if (s.state == SlotState::kDecode) {
        ok = Movable(s);
        ++moves;
      }
    }
    if (ok && moves < best_moves) {
      best = w;
      best_moves = moves;
    }
  }
  if (best == kNone) return;
  std::vector<size_t> from, to;
  for (size_t i = 0; i < n; ++i) {
    const bool inside = i >= best && i < best + k;
    if (!inside && slots_[i].state == SlotState::kDecode) from.push_back(i);
    if (inside && slots_[i].state == SlotState::kIdle) to.push_back(i);
  }
  for (size_t m = 0; m < from.size() && m < to.size(); ++m) {
    // The hole's cache (often the conversation that just finished there,
    // whose next turn will start with it) goes to an idle slot outside the
    // window: an empty one, else the least recently used (a slot this step
    // vacated counts as the oldest: its cells duplicate a running request's).
    size_t keep = kNone;
    if (!slots_[to[m]].kv.empty()) {
      for (size_t i = 0; i < n; ++i) {
        const Slot& s = slots_[i];
        if ((i >= best && i < best + k) || !Overwritable(s)) continue;
        if (keep == kNone ||
            (s.kv.empty() != slots_[keep].kv.empty() ? s.kv.empty()
                                                     : s.cached_at < slots_[keep].cached_at)) {
          keep = i;
        }
      }
    }
    MoveRunning(from[m], to[m], keep);
  }
}

void Scheduler::MoveRunning(size_t from, size_t to, size_t keep) {
  const auto start = clock_->Now();
  Slot& hole = slots_[to];
  if (keep != kNone && !hole.kv.empty()) {
    Slot& k = slots_[keep];
    k.kv.clear();
    if (engine_->CopyCells(hole.seq, k.seq).ok()) {
      k.kv = hole.kv;
      k.kv_scope = hole.kv_scope;
      k.cached_at = hole.cached_at;
    }
  }
  Slot& s = slots_[from];
  hole.kv.clear();  // MoveSequence() replaces the hole's cells
  if (Status st = engine_->MoveSequence(s.seq, hole.seq); !st.ok()) {
    spdlog::warn("could not move a running request from session slot {} to {}: {}", from, to,
                 st.ToString());
    return;  // it runs where it was; the hole holds nothing now
  }
  const engine::SeqId hole_seq = hole.seq, seq = s.seq;
  hole = std::move(s);
  hole.seq = hole_seq;
  // The slot left behind keeps the request's cells, a cache like any other
  // but the least recently used (the running request holds the same).
  s = Slot{};
  s.seq = seq;
  s.kv = hole.kv;
  s.kv_scope = hole.kv_scope;
  s.cached_at = util::Clock::TimePoint{};  // a duplicate: the first cache to give up
  for (size_t& i : hole.group->slots) {
    if (i == from) i = to;
  }
  for (Slot& w : slots_) {
    if (w.state == SlotState::kWait && w.wait_from == from) w.wait_from = to;
  }
  stats_.sequences_moved.Add();
  const double ms = util::Seconds(clock_->Now() - start) * 1000;
  if (keep != kNone) {
    spdlog::debug(
        "moved a running request from session slot {} to {} ({} tokens), its cache to {}, in "
        "{:.2f} ms",
        from, to, hole.kv.size(), keep, ms);
  } else {
    spdlog::debug("moved a running request from session slot {} to {} ({} tokens) in {:.2f} ms",
                  from, to, hole.kv.size(), ms);
  }
}

}  // namespace outpost::scheduler

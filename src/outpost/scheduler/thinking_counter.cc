#include "outpost/scheduler/thinking_counter.h"

#include <algorithm>

namespace outpost::scheduler {

ThinkingCounter::ThinkingCounter(const engine::ThinkingBlock& block)
    : start_(block.start),
      end_(block.end),
      state_(block.end.empty()     ? State::kDone
             : block.open          ? State::kInside
             : block.start.empty() ? State::kDone  // no tag to open it with
                                   : State::kUndecided) {}

void ThinkingCounter::Add(const std::string& piece) {
  if (state_ == State::kDone) return;
  ++counted_;
  seen_ += piece;
  if (state_ == State::kUndecided) {
    const size_t b = seen_.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return;
    const std::string head = seen_.substr(b);
    const size_t n = std::min(head.size(), start_.size());
    if (head.compare(0, n, start_, 0, n) != 0) {
      state_ = State::kDone;  // it answers without thinking
      counted_ = 0;
      return;
    }
    if (head.size() < start_.size()) return;  // still a prefix of the tag
    state_ = State::kInside;
    seen_ = head.substr(start_.size());
  }
  if (seen_.find(end_) != std::string::npos) {
    state_ = State::kDone;
    seen_.clear();
    return;
  }
  // Keep only what may be the start of the closing tag.
  if (seen_.size() >= end_.size()) seen_.erase(0, seen_.size() - (end_.size() - 1));
}

}  // namespace outpost::scheduler

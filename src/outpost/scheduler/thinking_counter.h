// ThinkingCounter — how many of an answer's tokens are thinking (OpenAI's
// usage.completion_tokens_details.reasoning_tokens), counted as they are
// generated from each token's text and the template's thinking block: the
// tokens up to and including the one that completes the closing tag. A
// block the prompt opened counts from the first token; otherwise only an
// answer that starts (after whitespace) with the opening tag thinks. An
// answer that never closes its block is all thinking. Counted whether or not
// the thinking is split off for the client. Not thread-safe: one per choice.
#pragma once

#include <cstdint>
#include <string>

#include "outpost/engine/types.h"

namespace outpost::scheduler {

class ThinkingCounter {
 public:
  explicit ThinkingCounter(const engine::ThinkingBlock& block);

  // One generated token's text (possibly empty, or part of a character).
  void Add(const std::string& piece);
  int32_t tokens() const { return state_ == State::kUndecided ? 0 : counted_; }

 private:
  enum class State { kUndecided, kInside, kDone };
  std::string start_, end_;
  State state_;
  int32_t counted_ = 0;  // while undecided: tokens so far, thinking if it opens
  std::string seen_;     // undecided: the answer so far; inside: the tail that may begin end_
};

}  // namespace outpost::scheduler

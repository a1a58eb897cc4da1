// StopMatcher — finds stop strings in streamed text that arrives in arbitrary
// pieces (a stop string may span several tokens).
//
// Feed() returns the text that is safe to emit now; text that could still be
// the start of a stop string is held back until it is either completed (stop)
// or ruled out. One per request; not thread-safe (engine thread).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace outpost::scheduler {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  // Appends `piece`. Returns the text now safe to emit. When a stop string is
  // found, stopped() becomes true and the returned text ends just before it;
  // everything after is dropped.
  std::string Feed(std::string_view piece);

  // Returns and clears the held-back text (call when generation ends for
  // another reason: its tail cannot become a stop any more).
  std::string Flush();

  bool stopped() const { return stopped_; }
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
  std::string matched_;
};

}  // namespace outpost::scheduler

// IndentLimit — llama-server's `n_indent` for code completion: every line of
// an answer after its first must start with at least `n` blanks (spaces or
// tabs), or the answer ends before that line's first character. An editor
// sends the indentation of the cursor's line, so a suggestion stays inside
// the block being written instead of running on into the code after it. A
// blank line counts as a line at indentation 0 (llama-server's rule too).
// Not thread-safe: one per answer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace outpost::api {

class IndentLimit {
 public:
  explicit IndentLimit(int32_t n) : n_(n) {}

  // `text` is the answer so far (it only grows between calls). Returns
  // where it ends: text.size() while every complete line start is indented
  // enough (or not yet known: blanks only), else the position of the first
  // character of the first line that is not — everything from there on is
  // dropped, and later calls return that same position.
  size_t End(std::string_view text);

  bool cut() const { return cut_ != std::string::npos; }

 private:
  int32_t n_;
  size_t scan_ = 0;                  // the next newline is looked for from here
  size_t line_ = std::string::npos;  // start of a line whose indent is still open
  size_t cut_ = std::string::npos;   // where the answer ends, once known
};

}  // namespace outpost::api

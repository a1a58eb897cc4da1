#include "outpost/api/indent_limit.h"

namespace outpost::api {

size_t IndentLimit::End(std::string_view text) {
  if (cut_ != std::string::npos) return cut_;
  if (n_ <= 0) return text.size();
  for (;;) {
    if (line_ != std::string::npos) {
      size_t p = line_;
      while (p < text.size() && (text[p] == ' ' || text[p] == '\t')) ++p;
      if (p == text.size()) return text.size();  // blanks so far: not known yet
      if (p - line_ < static_cast<size_t>(n_)) {
        cut_ = p;
        return cut_;
      }
      line_ = std::string::npos;
    }
    const size_t nl = text.find('\n', scan_);
    if (nl == std::string_view::npos) {
      scan_ = text.size();
      return text.size();
    }
    line_ = scan_ = nl + 1;
  }
}

}  // namespace outpost::api

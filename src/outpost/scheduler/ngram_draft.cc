#include "outpost/scheduler/ngram_draft.h"

#include <algorithm>

namespace outpost::scheduler {

std::vector<engine::Token> NgramDraft(const std::vector<engine::Token>& history,
                                      int32_t max_tokens) {
  const auto size = static_cast<int64_t>(history.size());
  if (max_tokens <= 0) return {};
  for (int32_t n = kMaxNgram; n >= kMinNgram; --n) {
    if (size <= n) continue;
    const auto suffix = history.end() - n;
    // The latest earlier occurrence: its continuation is the likeliest.
    for (int64_t start = size - n - 1; start >= 0; --start) {
      if (!std::equal(suffix, history.end(), history.begin() + start)) continue;
      const int64_t from = start + n;
      const int64_t len = std::min<int64_t>(max_tokens, size - from);
      if (len <= 0) continue;
      return {history.begin() + from, history.begin() + from + len};
    }
  }
  return {};
}

}  // namespace outpost::scheduler

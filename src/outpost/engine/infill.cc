#include "outpost/engine/infill.h"

#include <algorithm>

namespace outpost::engine {

std::vector<Token> BuildInfillPrompt(const InfillTokens& t, const InfillInput& in, int32_t window,
                                     int32_t extra_room, const InfillTokenizer& tokenize) {
  const auto append = [](std::vector<Token>* to, const std::vector<Token>& from) {
    to->insert(to->end(), from.begin(), from.end());
  };
  // The other files, each behind a file separator (or, for a model without
  // one, behind a plain-text snippet line), the current file's last.
  std::vector<Token> extra;
  if (t.rep != kNoToken) {
    extra.push_back(t.rep);
    append(&extra, tokenize("myproject\n", false));
  }
  for (const InfillChunk& chunk : in.extra) {
    if (t.sep != kNoToken) {
      extra.push_back(t.sep);
      append(&extra, tokenize((chunk.filename.empty() ? "tmp" : chunk.filename) + "\n", false));
    } else {
      append(&extra, tokenize("\n\n--- snippet ---\n\n", false));
    }
    append(&extra, tokenize(chunk.text, false));
  }
  if (t.sep != kNoToken) {
    extra.push_back(t.sep);
    append(&extra, tokenize("filename\n", false));
  }

  std::vector<Token> prefix = tokenize(in.prefix, false);
  std::vector<Token> suffix = tokenize(in.suffix, false);
  const std::vector<Token> prompt = tokenize(in.prompt, true);
  const auto n_prefix =
      static_cast<int32_t>(std::min<size_t>(prefix.size(), static_cast<size_t>(3 * (window / 4))));
  const auto n_suffix = static_cast<int32_t>(std::min<size_t>(
      suffix.size(), static_cast<size_t>(std::max<int64_t>(
                         0, window / 4 - (2 + static_cast<int64_t>(prompt.size()))))));
  const auto n_extra = static_cast<int32_t>(
      std::min<size_t>(extra.size(), static_cast<size_t>(std::max(0, extra_room))));

  std::vector<Token> out;
  out.reserve(static_cast<size_t>(n_extra + n_prefix + n_suffix) + prompt.size() + 4);
  out.insert(out.end(), extra.end() - n_extra, extra.end());
  if (t.bos != kNoToken) out.push_back(t.bos);
  out.push_back(t.pre);
  out.insert(out.end(), prefix.end() - n_prefix, prefix.end());
  append(&out, prompt);
  out.push_back(t.suf);
  out.insert(out.end(), suffix.begin(), suffix.begin() + n_suffix);
  out.push_back(t.mid);
  return out;
}

}  // namespace outpost::engine

// Infill — the prompt of a fill-in-the-middle request: code before and after
// a gap (an editor's cursor), which a model trained for it (Qwen2.5-Coder,
// CodeLlama, StarCoder 2, DeepSeek-Coder, Codestral …) completes between
// its FIM marker tokens. The layout is llama-server's (/infill): the other
// files first (the repo-level pattern of arXiv:2409.12186 where the model has
// the tokens for it), then
//   [BOS] [FIM_PRE] prefix prompt [FIM_SUF] suffix [FIM_MID]
// so the same request gives the same prompt tokens on both servers.
//
// Pure functions over a tokenizer; no llama.cpp types.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "outpost/engine/types.h"

namespace outpost::engine {

// A model's fill-in-the-middle tokens, from its GGUF (tokenizer.ggml.fim_*,
// or found by their text as llama.cpp does); kNoToken where it has none.
struct InfillTokens {
  Token pre = kNoToken;  // before the prefix
  Token suf = kNoToken;  // before the suffix
  Token mid = kNoToken;  // where the model starts writing
  Token rep = kNoToken;  // repository name (repo-level context)
  Token sep = kNoToken;  // file separator (repo-level context)
  Token bos = kNoToken;  // the model's BOS when its tokenizer adds one
  // The three a fill-in-the-middle prompt needs.
  bool supported() const { return pre != kNoToken && suf != kNoToken && mid != kNoToken; }
};

// Another file the model may read (llama-server's input_extra).
struct InfillChunk {
  std::string filename;  // "" reads as llama-server's "tmp"
  std::string text;
};

// The text around the gap.
struct InfillInput {
  std::string prefix;  // before the cursor (OpenAI's prompt; llama-server's input_prefix)
  std::string suffix;  // after it
  // llama-server's `prompt`: text right before the cursor, after the prefix,
  // never cut (the prefix is cut from its start); parsed for control tokens.
  std::string prompt;
  std::vector<InfillChunk> extra;
};

// Text → tokens, without BOS: (text, parse_special).
using InfillTokenizer = std::function<std::vector<Token>(std::string_view, bool)>;

// The prompt tokens. `window` bounds the gap's surroundings as llama-server's
// batch size does (2048 there): the prefix keeps its last 3/4 of it, the
// suffix its first quarter less the prompt and two markers. The other files
// fill up to `extra_room` tokens, the last ones kept. REQUIRES supported().
std::vector<Token> BuildInfillPrompt(const InfillTokens& t, const InfillInput& in, int32_t window,
                                     int32_t extra_room, const InfillTokenizer& tokenize);

}  // namespace outpost::engine

// NgramDraft — draftless speculation's guess of the next tokens: find the
// latest earlier place where the sequence's last n tokens (n from kMaxNgram
// down to kMinNgram) appeared, and propose the tokens that followed there.
// Text that copies its input (extraction, summaries quoting a document,
// code edits) repeats spans, and those spans are then verified in one step
// instead of one token per step. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "outpost/engine/types.h"

namespace outpost::scheduler {

inline constexpr int32_t kMaxNgram = 4;
inline constexpr int32_t kMinNgram = 2;

// Up to `max_tokens` tokens to try after `history` (prompt and output so
// far); empty when no suffix of kMinNgram tokens or more appeared before.
std::vector<engine::Token> NgramDraft(const std::vector<engine::Token>& history,
                                      int32_t max_tokens);

}  // namespace outpost::scheduler

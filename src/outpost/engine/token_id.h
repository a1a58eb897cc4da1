// A token id a client named (a prompt of ids, a logit_bias key, /tokenize's
// content, /detokenize's tokens), checked against the vocabulary of the model
// that will read it — one message for every place that takes ids.
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "outpost/util/status.h"

namespace outpost::engine {

// Ok when 0 <= id < n_vocab. Errors: InvalidArgument, param = field:
// "'<field>' token id <id> is negative (ids start at 0)" or
// "'<field>' token id <id> is outside the vocabulary [0, <n_vocab>)".
Status CheckTokenId(int64_t id, int32_t n_vocab, const std::string& field);

}  // namespace outpost::engine

// Rendering of OpenAI response bodies and stream chunks. Core types hold no
// JSON; this file is where results become wire format. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "outpost/scheduler/request.h"
#include "outpost/util/random.h"

namespace outpost::api {

// Fields every response of one request shares.
struct ResponseMeta {
  std::string id;       // "chatcmpl-..." / "cmpl-..."
  int64_t created = 0;  // unix seconds
  std::string model;
  std::string system_fingerprint;  // identifies model file + build
};

std::string ChatCompletionBody(const ResponseMeta& m, const std::string& text,
                               scheduler::FinishReason finish, const scheduler::Usage& usage);
// One streamed chat chunk. role_start: the first chunk (delta.role = assistant).
std::string ChatChunk(const ResponseMeta& m, const std::string* content, bool role_start,
                      scheduler::FinishReason finish);
std::string CompletionBody(const ResponseMeta& m, const std::string& text,
                           scheduler::FinishReason finish, const scheduler::Usage& usage);
std::string CompletionChunk(const ResponseMeta& m, const std::string& text,
                            scheduler::FinishReason finish);
// The final usage-only chunk (stream_options.include_usage): choices is empty.
std::string UsageChunk(const ResponseMeta& m, bool chat, const scheduler::Usage& usage);

// A fresh id with the given prefix: prefix + 24 random alphanumerics.
std::string NewId(const std::string& prefix, util::Random& random = util::RealRandom());

}  // namespace outpost::api

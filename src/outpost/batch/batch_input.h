// ParseBatchInput — checks a batch's input file (JSONL, one request per
// line) before any line runs, as OpenAI does while a batch is "validating".
//
// Each non-blank line must be an object with a unique non-empty `custom_id`
// (at most 512 bytes), `method` "POST", `url` equal to the batch's endpoint
// and a `body` object that does not ask to stream; every body names the same
// `model` (or none). A line's body is otherwise not checked here: a bad body
// is that line's failure (a 400 in the error file), not the batch's.
// Pure function; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "outpost/batch/batch_types.h"

namespace outpost::batch {

struct InputError {
  int64_t line = 0;  // 1-based
  std::string code;  // "invalid_json_line", "duplicate_custom_id", ...
  std::string message;
  std::string param;  // the line's field, or ""
};

struct ParsedInput {
  std::vector<BatchLine> lines;
  std::vector<InputError> errors;  // at most kMaxInputErrors; empty: the file is good
  std::string model;               // the model every line names; "" when they name none
};

inline constexpr size_t kMaxInputErrors = 100;

ParsedInput ParseBatchInput(const std::string& content, const std::string& endpoint,
                            size_t max_lines);

// The errors as OpenAI's batch "errors" object: {"object":"list","data":[…]}.
std::string InputErrorsJson(const std::vector<InputError>& errors);

}  // namespace outpost::batch

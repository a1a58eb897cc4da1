// libFuzzer: a batch's input file (batch/batch_input.h), checked line by line
// before a batch exists.
#include <cstddef>
#include <cstdint>
#include <string>

#include "outpost/batch/batch_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  const auto parsed = outpost::batch::ParseBatchInput(in, "/v1/chat/completions", 1000);
  if (parsed.errors.size() > outpost::batch::kMaxInputErrors) __builtin_trap();
  (void)outpost::batch::InputErrorsJson(parsed.errors);
  return 0;
}

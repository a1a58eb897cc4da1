// libFuzzer: the generic tool-call answer parsers (router/tool_calls.h) on
// arbitrary model output, whole and as growing prefixes (streaming).
#include <cstddef>
#include <cstdint>
#include <string>

#include "outpost/router/tool_calls.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  (void)outpost::router::ParseToolAnswer(in);
  for (size_t n = 0; n <= in.size(); n += 1 + n / 4) {
    (void)outpost::router::ParsePartialToolAnswer(in.substr(0, n));
  }
  return 0;
}

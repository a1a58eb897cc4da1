// libFuzzer: what the router reads from relayed answers (router/relay_scan.h):
// a whole JSON body's usage, and an SSE stream's [DONE] and usage split into
// chunks at arbitrary places.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "outpost/router/relay_scan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  outpost::router::RelayedUsage usage;
  (void)outpost::router::ScanUsage(in, &usage);
  if (usage.prompt_tokens < 0 || usage.completion_tokens < 0) __builtin_trap();
  outpost::router::SseScan scan;
  const size_t step = size > 0 ? 1 + data[0] % 13 : 1;
  for (size_t i = 0; i < size; i += step) scan.Feed(in.substr(i, step));
  if (scan.usage().prompt_tokens < 0 || scan.usage().completion_tokens < 0) __builtin_trap();
  return 0;
}

// libFuzzer: the generic tool-call answer parsers (router/tool_calls.h) on
// arbitrary model output, whole and as growing prefixes (streaming); and
// util::CloseJsonPrefix on the same prefixes (a cut call's arguments sent
// back in a conversation): what it returns is JSON, and JSON is returned as
// it is.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "outpost/router/tool_calls.h"
#include "outpost/util/json_text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  (void)outpost::router::ParseToolAnswer(in);
  for (size_t n = 0; n <= in.size(); n += 1 + n / 4) {
    const std::string prefix = in.substr(0, n);
    (void)outpost::router::ParsePartialToolAnswer(prefix);
    const auto closed = outpost::util::CloseJsonPrefix(prefix);
    if (closed && !nlohmann::json::accept(*closed)) std::abort();
    if (nlohmann::json::accept(prefix) && closed != prefix) std::abort();
  }
  return 0;
}

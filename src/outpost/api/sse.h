// Server-sent events framing for streamed completions (OpenAI style):
// each event is "data: <json>\n\n"; the stream ends with "data: [DONE]\n\n". Pure.
#pragma once

#include <string>
#include <string_view>

namespace outpost::api {

// Frames one payload. Payloads containing newlines are split into several
// "data:" lines as the SSE spec requires (JSON from Outpost never has any).
std::string SseData(std::string_view payload);
inline std::string SseDone() {
  return "data: [DONE]\n\n";
}

}  // namespace outpost::api

// Server-sent events framing for streamed answers (OpenAI style): each
// completion chunk is "data: <json>\n\n" and the stream ends with
// "data: [DONE]\n\n"; a Responses API event is named ("event: <type>"). Pure.
#pragma once

#include <string>
#include <string_view>

namespace outpost::api {

// Frames one payload. Payloads containing newlines are split into several
// "data:" lines as the SSE spec requires (JSON from Outpost never has any).
std::string SseData(std::string_view payload);
// A named event ("event: <name>\n" then the data), as the Responses API
// streams: its stream ends with its last event, not [DONE].
std::string SseEvent(std::string_view name, std::string_view payload);
inline std::string SseDone() {
  return "data: [DONE]\n\n";
}

}  // namespace outpost::api

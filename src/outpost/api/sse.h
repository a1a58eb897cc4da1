// Server-sent events framing for streamed answers (OpenAI style): each
// completion chunk is "data: <json>\n\n" and the stream ends with
// "data: [DONE]\n\n"; a Responses API event is named ("event: <type>").
// SseEventSplitter cuts a stream that arrives in pieces back into events.
// Pure; a splitter is one stream's, used from one thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

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

// A stream's bytes, cut anywhere, back into whole events: each ends at a
// blank line (LF or CRLF) and is returned with it; blank lines between
// events are not events.
class SseEventSplitter {
 public:
  // The events `data` completes, in order.
  std::vector<std::string> Feed(std::string_view data);
  // At the stream's end: a last event that had no blank line, given one;
  // empty when there is none.
  std::string Flush();

 private:
  std::string partial_;  // the event not yet ended
};

}  // namespace outpost::api

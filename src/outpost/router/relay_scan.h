// What the router reads from a relayed answer without changing it: whether
// a JSON body is valid and the usage it reports, and, across a stream's
// chunks, its end (the [DONE] marker; a Responses stream's last event) and
// the usage of its data events. Pure values
// owned by one relay; the input is an upstream's, so nothing here trusts it
// (negative counts are ignored, an endless line is not buffered).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace outpost::router {

struct RelayedUsage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
};

// Validates `json` (strictly) and adds its usage to *usage: top-level
// usage.prompt_tokens / completion_tokens, or a Response's input_tokens /
// output_tokens (top-level, or under "response" in a stream event). False
// when it is not valid JSON.
bool ScanUsage(std::string_view json, RelayedUsage* usage);

// Splits an SSE stream into lines across chunk boundaries.
class SseScan {
 public:
  // Lines longer than this are skipped, not buffered (a data event of an
  // OpenAI stream is a few KiB).
  static constexpr size_t kMaxLine = 1 << 20;

  void Feed(std::string_view chunk);
  bool saw_done() const { return saw_done_; }
  const RelayedUsage& usage() const { return usage_; }

 private:
  void Line(std::string_view line);

  std::string line_;
  bool skipping_ = false;  // inside a line longer than kMaxLine
  bool saw_done_ = false;
  RelayedUsage usage_;
};

}  // namespace outpost::router

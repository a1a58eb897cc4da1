#include "outpost/router/relay_scan.h"

#include <algorithm>
#include <climits>
#include <nlohmann/json.hpp>

namespace outpost::router {
namespace {

// Validates a JSON text and picks out the token counts of its usage object
// without building a document (relayed bodies are only checked and counted,
// never changed): top-level usage.prompt_tokens / completion_tokens (chat,
// completions), usage.input_tokens / output_tokens (a Response), and
// response.usage.* (a Responses stream's last event).
class UsageScanner : public nlohmann::json_sax<nlohmann::json> {
 public:
  // False when `text` is not valid JSON.
  bool Scan(std::string_view text) {
    return nlohmann::json::sax_parse(text, this, nlohmann::json::input_format_t::json,
                                     /*strict=*/true);
  }
  int64_t prompt() const { return prompt_; }
  int64_t completion() const { return completion_; }

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t v) override { return Number(v); }
  bool number_unsigned(number_unsigned_t v) override {
    return Number(v > static_cast<number_unsigned_t>(INT64_MAX) ? 0 : static_cast<int64_t>(v));
  }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    // The object opened here is at depth_ + 1; its key was the last one read.
    if (usage_depth_ == 0 && key_ == "usage" &&
        (depth_ == 1 || (depth_ == 2 && outer_key_ == "response"))) {
      usage_depth_ = depth_ + 1;
    }
    ++depth_;
    return true;
  }
  bool key(string_t& k) override {
    if (depth_ == 1) outer_key_ = k;
    key_ = k;
    return true;
  }
  bool end_object() override {
    if (depth_-- == usage_depth_) usage_depth_ = 0;
    key_.clear();
    return true;
  }
  bool start_array(std::size_t) override {
    ++depth_;
    key_.clear();
    return true;
  }
  bool end_array() override {
    --depth_;
    key_.clear();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  bool Number(int64_t v) {
    if (usage_depth_ != 0 && depth_ == usage_depth_) {
      if (key_ == "prompt_tokens" || key_ == "input_tokens") prompt_ = std::max<int64_t>(v, 0);
      if (key_ == "completion_tokens" || key_ == "output_tokens") {
        completion_ = std::max<int64_t>(v, 0);
      }
    }
    return true;
  }
  int depth_ = 0;
  int usage_depth_ = 0;  // the depth inside the usage object; 0 outside it
  std::string key_;
  std::string outer_key_;  // the last top-level key
  int64_t prompt_ = 0, completion_ = 0;
};

}  // namespace

bool ScanUsage(std::string_view json, RelayedUsage* usage) {
  UsageScanner s;
  if (!s.Scan(json)) return false;
  usage->prompt_tokens += s.prompt();
  usage->completion_tokens += s.completion();
  return true;
}

void SseScan::Feed(std::string_view chunk) {
  while (!chunk.empty()) {
    const size_t nl = chunk.find('\n');
    const std::string_view part = chunk.substr(0, nl);
    if (!skipping_) {
      if (line_.size() + part.size() > kMaxLine) {
        skipping_ = true;
        line_.clear();
      } else {
        line_.append(part);
      }
    }
    if (nl == std::string_view::npos) return;
    if (!skipping_) Line(line_);
    line_.clear();
    skipping_ = false;
    chunk.remove_prefix(nl + 1);
  }
}

void SseScan::Line(std::string_view line) {
  // A chat or completions stream ends with [DONE]; a Responses stream with
  // its last event (response.completed, .incomplete, .failed, or error).
  std::string_view event;
  if (line.rfind("event:", 0) == 0) {
    event = line.substr(6);
    if (!event.empty() && event.front() == ' ') event.remove_prefix(1);  // SSE: one optional space
  }
  if (line.rfind("data: [DONE]", 0) == 0 || event == "response.completed" ||
      event == "response.incomplete" || event == "response.failed" || event == "error") {
    saw_done_ = true;
  } else if (line.rfind("data: {", 0) == 0 && line.find("\"usage\"") != std::string_view::npos) {
    ScanUsage(line.substr(6), &usage_);
  }
}

}  // namespace outpost::router

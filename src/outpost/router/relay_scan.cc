#include "outpost/router/relay_scan.h"

#include <algorithm>
#include <climits>
#include <nlohmann/json.hpp>

namespace outpost::router {
namespace {

// Validates a JSON text and picks out usage.prompt_tokens and
// usage.completion_tokens without building a document (relayed bodies are
// only checked and counted, never changed).
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
    // Entering the top-level "usage" object puts us at depth 2 inside it.
    if (depth_ == 1) in_usage_ = key_ == "usage";
    ++depth_;
    return true;
  }
  bool key(string_t& k) override {
    if (depth_ <= 2) key_ = k;
    return true;
  }
  bool end_object() override {
    if (--depth_ == 1) in_usage_ = false;
    return true;
  }
  bool start_array(std::size_t) override {
    ++depth_;
    return true;
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  bool Number(int64_t v) {
    if (in_usage_ && depth_ == 2) {
      if (key_ == "prompt_tokens") prompt_ = std::max<int64_t>(v, 0);
      if (key_ == "completion_tokens") completion_ = std::max<int64_t>(v, 0);
    }
    return true;
  }
  int depth_ = 0;
  bool in_usage_ = false;
  std::string key_;
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
  if (line.rfind("data: [DONE]", 0) == 0) {
    saw_done_ = true;
  } else if (line.rfind("data: {", 0) == 0 && line.find("\"usage\"") != std::string_view::npos) {
    ScanUsage(line.substr(6), &usage_);
  }
}

}  // namespace outpost::router

#include "outpost/engine/json_prefix.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace outpost::engine {
namespace {

// A place where the text may be cut: text[0, end) followed by the closing
// brackets of `open` (innermost last) is JSON when the element before `end`
// is whole.
struct Cut {
  size_t end;
  std::string open;
};

std::string Closed(const std::string& text, size_t end, const std::string& open) {
  std::string out = text.substr(0, end);
  for (auto it = open.rbegin(); it != open.rend(); ++it) out += *it == '{' ? '}' : ']';
  return out;
}

}  // namespace

std::optional<std::string> CloseJsonPrefix(const std::string& text) {
  if (nlohmann::json::accept(text)) return text;
  std::string open;       // the brackets open at the scan position
  std::vector<Cut> cuts;  // in text order
  bool in_string = false;
  size_t escape_at = std::string::npos;  // the backslash of the escape being read
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escape_at != std::string::npos) {
        // \uXXXX is six characters; the others two.
        if (text[escape_at + 1] != 'u' || i - escape_at == 5) escape_at = std::string::npos;
      } else if (c == '\\') {
        escape_at = i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '{':
      case '[':
        open += c;
        cuts.push_back({i + 1, open});  // an empty container is whole
        break;
      case '}':
      case ']':
        if (open.empty() || (c == '}') != (open.back() == '{')) return std::nullopt;
        open.pop_back();
        cuts.push_back({i + 1, open});
        break;
      case ',':
        cuts.push_back({i, open});  // the element before the comma is whole
        break;
      default:
        break;
    }
  }
  // The text as it ends: an open string closed (less a half-read escape).
  if (in_string) {
    const size_t end = escape_at != std::string::npos ? escape_at : text.size();
    const std::string candidate = Closed(text.substr(0, end) + '"', end + 1, open);
    if (nlohmann::json::accept(candidate)) return candidate;
  } else {
    const std::string candidate = Closed(text, text.size(), open);
    if (nlohmann::json::accept(candidate)) return candidate;
  }
  // Back to the last element that was whole.
  for (auto it = cuts.rbegin(); it != cuts.rend(); ++it) {
    const std::string candidate = Closed(text, it->end, it->open);
    if (nlohmann::json::accept(candidate)) return candidate;
  }
  return std::nullopt;
}

}  // namespace outpost::engine

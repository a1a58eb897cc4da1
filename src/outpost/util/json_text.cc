#include "outpost/util/json_text.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <vector>

namespace outpost::util {
namespace {

// text[0, end) with the brackets in `open` closed, innermost first.
std::string Closed(const std::string& text, size_t end, const std::string& open) {
  std::string out = text.substr(0, end);
  for (auto it = open.rbegin(); it != open.rend(); ++it) out += *it == '{' ? '}' : ']';
  return out;
}

}  // namespace

std::optional<std::string> CloseJsonPrefix(const std::string& text) {
  if (nlohmann::json::accept(text)) return text;
  // One pass. A cut is a place where what came before is whole when closed:
  // right after a bracket (an empty or a closed container) and right before
  // a comma. Brackets open and close only at cuts, so the brackets open at
  // the last cut are the ones open at the end: two candidates, each checked
  // once, and the work stays linear in the text whatever it holds.
  std::string open;
  size_t last_cut = std::string::npos;
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
        last_cut = i + 1;
        break;
      case '}':
      case ']':
        if (open.empty() || (c == '}') != (open.back() == '{')) return std::nullopt;
        open.pop_back();
        last_cut = i + 1;
        break;
      case ',':
        last_cut = i;
        break;
      default:
        break;
    }
  }
  // The text as it ends, an open string closed (less a half-read escape).
  std::string candidate;
  if (in_string) {
    const size_t end = escape_at != std::string::npos ? escape_at : text.size();
    candidate = Closed(text.substr(0, end) + '"', end + 1, open);
  } else {
    candidate = Closed(text, text.size(), open);
  }
  if (nlohmann::json::accept(candidate)) return candidate;
  // Back to the last element that was whole.
  if (last_cut == std::string::npos) return std::nullopt;
  candidate = Closed(text, last_cut, open);
  if (nlohmann::json::accept(candidate)) return candidate;
  return std::nullopt;
}

namespace {

// Walks JSON text: outside(i, c) for each character outside strings (false
// stops the walk), string(start, end) for each string's contents.
template <typename Outside, typename String>
void WalkJsonText(std::string_view text, Outside outside, String string) {
  bool in_string = false, escaped = false;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (!in_string) {
      if (c == '"') {
        in_string = true;
        start = i + 1;
      } else if (!outside(i, c)) {
        return;
      }
    } else if (escaped) {
      escaped = false;
    } else if (c == '\\') {
      escaped = true;
    } else if (c == '"') {
      in_string = false;
      string(start, i);
    }
  }
}

}  // namespace

int JsonDepth(std::string_view text, int limit) {
  int depth = 0;
  int deepest = 0;
  WalkJsonText(
      text,
      [&](size_t, char c) {
        if (c == '{' || c == '[') {
          deepest = std::max(deepest, ++depth);
          return deepest <= limit;
        }
        if ((c == '}' || c == ']') && depth > 0) --depth;
        return true;
      },
      [](size_t, size_t) {});
  return deepest;
}

std::optional<std::string_view> JsonMemberText(std::string_view text, std::string_view key) {
  std::optional<std::string_view> found;
  int depth = 0;
  std::string_view last_string;  // the last string closed at depth 1
  bool want = false;             // the member being read is `key`
  size_t value_start = 0;
  WalkJsonText(
      text,
      [&](size_t i, char c) {
        switch (c) {
          case ':':
            if (depth == 1) {
              // Keys written with escapes are compared as written.
              want = last_string == key;
              value_start = i + 1;
            }
            break;
          case '{':
          case '[':
            ++depth;
            break;
          case '}':
          case ']':
            if (depth == 1) {
              if (want) found = text.substr(value_start, i - value_start);
              want = false;
            }
            --depth;
            break;
          case ',':
            if (depth == 1) {
              if (want) found = text.substr(value_start, i - value_start);
              want = false;
            }
            break;
          default:
            break;
        }
        return true;
      },
      [&](size_t start, size_t end) {
        if (depth == 1) last_string = text.substr(start, end - start);
      });
  return found;
}

JsonMembers CountJsonMembers(std::string_view text) {
  JsonMembers out;
  std::vector<size_t> members;  // per open object
  WalkJsonText(
      text,
      [&](size_t, char c) {
        if (c == '{') {
          members.push_back(0);
        } else if (c == '}' && !members.empty()) {
          members.pop_back();
        } else if (c == ':' && !members.empty()) {
          ++out.total;
          out.most_in_one = std::max(out.most_in_one, ++members.back());
        }
        return true;
      },
      [](size_t, size_t) {});
  return out;
}

Status CheckJsonDepth(std::string_view text, const std::string& what, const std::string& param) {
  if (JsonDepth(text) <= kMaxJsonDepth) return Status::Ok();
  return Status::InvalidArgument(what + " nests arrays and objects more than " +
                                     std::to_string(kMaxJsonDepth) + " levels deep",
                                 param);
}

namespace {

size_t Alternatives(const nlohmann::json& s) {
  size_t n = 0;
  if (s.is_object()) {
    for (const auto& [k, v] : s.items()) {
      if ((k == "enum" || k == "anyOf" || k == "oneOf") && v.is_array()) n += v.size();
      n += Alternatives(v);
    }
  } else if (s.is_array()) {
    for (const auto& v : s) n += Alternatives(v);
  }
  return n;
}

}  // namespace

size_t SchemaAlternatives(std::string_view text) {
  const auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return doc.is_discarded() ? 0 : Alternatives(doc);
}

}  // namespace outpost::util

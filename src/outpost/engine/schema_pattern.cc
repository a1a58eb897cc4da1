#include "outpost/engine/schema_pattern.h"

#include <cctype>

namespace outpost::engine {
namespace {

// Metacharacters the converter reads escaped (outside classes).
bool EscapedMeta(char c) {
  const std::string_view meta = "^$.[]()|{}*+?";
  return meta.find(c) != std::string_view::npos;
}

// Escapes GBNF knows as they are: \t \n \r \\ \" \[ \] \- and \x \u \U.
bool GbnfEscape(char c) {
  const std::string_view known = "trn\\\"[]-xuU";
  return known.find(c) != std::string_view::npos;
}

// What a negated class or `.` must also leave out so that the string stays a
// JSON string: a raw quote, backslash or control character would end or
// break it (llama.cpp's `.` is [^\x0A\x0D], and output "a"b" is not JSON).
constexpr std::string_view kNotJson = R"("\\\x00-\x1F)";

// The class body (without brackets) for \d, \w, \s; empty for others.
std::string_view ShorthandClass(char c) {
  switch (c) {
    case 'd':
    case 'D':
      return "0-9";
    case 'w':
    case 'W':
      return "a-zA-Z0-9_";
    case 's':
    case 'S':
      return " \\t\\n\\r\\x0B\\x0C";
    default:
      return {};
  }
}

bool IsPunct(char c) {
  return std::ispunct(static_cast<unsigned char>(c)) != 0 || c == ' ';
}

// True when the '$' at text[i] is escaped (an odd number of backslashes).
bool Escaped(std::string_view text, size_t i) {
  size_t n = 0;
  while (i > n && text[i - n - 1] == '\\') ++n;
  return n % 2 == 1;
}

}  // namespace

std::string RewriteSchemaPattern(std::string_view pattern) {
  if (pattern.empty()) {
    return "^[^" + std::string(kNotJson) + "]*$";  // every string contains the empty match
  }
  const std::string any = "[^" + std::string(kNotJson) + "]";
  std::string out;
  out.reserve(pattern.size() + 16);
  bool in_class = false;
  bool negated_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c != '\\' || i + 1 == pattern.size()) {
      if (!in_class && c == '[') {
        in_class = true;
        out += c;
        // A negated class's '^' is not the character '^'.
        negated_class = i + 1 < pattern.size() && pattern[i + 1] == '^';
        if (negated_class) out += pattern[++i];
      } else if (in_class && c == ']') {
        in_class = false;
        if (negated_class) out += kNotJson;
        out += c;
      } else if (!in_class && c == '.') {
        out += any;
      } else {
        out += c;
      }
      continue;
    }
    const char e = pattern[++i];
    const std::string_view cls = ShorthandClass(e);
    const bool negated = std::isupper(static_cast<unsigned char>(e)) != 0;
    if (!cls.empty() && !in_class) {
      out += negated ? "[^" : "[";
      out += cls;
      if (negated) out += kNotJson;
      out += ']';
    } else if (!cls.empty() && in_class && !negated) {
      out += cls;
    } else if (GbnfEscape(e) || (!in_class && EscapedMeta(e))) {
      out += '\\';
      out += e;
    } else if (IsPunct(e) && e != '^') {
      out += e;  // \/ \: \# \. in a class …: the character itself
    } else {
      out += '\\';  // \b, \1, \k, \p, \D in a class, …: the converter refuses them
      out += e;
    }
  }
  // JSON schema patterns are not anchored: "contains a match".
  const bool starts = !out.empty() && out.front() == '^';
  const bool ends = !out.empty() && out.back() == '$' && !Escaped(out, out.size() - 1);
  if (starts && ends && out.size() >= 2) return out;
  std::string core = out.substr(starts ? 1 : 0, out.size() - (starts ? 1 : 0) - (ends ? 1 : 0));
  return "^" + (starts ? "" : any + "*") + "(?:" + core + ")" + (ends ? "" : any + "*") + "$";
}

}  // namespace outpost::engine

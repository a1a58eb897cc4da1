#include "outpost/engine/schema_pattern.h"

#include <bitset>
#include <cctype>
#include <string>

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

int HexValue(std::string_view hex) {
  int v = 0;
  for (char h : hex) {
    if (!std::isxdigit(static_cast<unsigned char>(h))) return -1;
    v = v * 16 +
        (std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
  }
  return v;
}

// Characters a JSON string holds only escaped: the quote, the backslash and
// control characters.
bool NeedsJsonEscape(int c) {
  return c < 0x20 || c == '"' || c == '\\';
}

// The pattern (over the answer's raw JSON text) for one such character as a
// JSON string writes it: \" \\ \t \n …, else \u00XX.
std::string JsonEscaped(int c) {
  switch (c) {
    case '"':
      return R"(\\")";
    case '\\':
      return R"(\\\\)";
    case '\b':
      return R"(\\b)";
    case '\t':
      return R"(\\t)";
    case '\n':
      return R"(\\n)";
    case '\f':
      return R"(\\f)";
    case '\r':
      return R"(\\r)";
    default: {
      static const char* kHex = "0123456789abcdef";
      return std::string(R"(\\u00)") + kHex[(c >> 4) & 0xF] + kHex[c & 0xF];
    }
  }
}

// The ASCII characters of a positive class, and its other members as they
// were written (UTF-8 text).
struct ClassSet {
  std::bitset<128> ascii;
  std::string other;
};

// One class member's character at pattern[i] (i moves past it): its code,
// -1 for a UTF-8 character (appended to set->other), -2 for a shorthand
// (added to *set), -3 for what is not read here (\D in a class, \p, …).
int ClassMember(std::string_view pattern, size_t& i, ClassSet* set) {
  const char c = pattern[i++];
  if (static_cast<unsigned char>(c) >= 0x80) {
    set->other += c;
    while (i < pattern.size() && (static_cast<unsigned char>(pattern[i]) & 0xC0) == 0x80) {
      set->other += pattern[i++];
    }
    return -1;
  }
  if (c != '\\') return c;
  if (i == pattern.size()) return -3;
  const char e = pattern[i++];
  switch (e) {
    case 'd':
    case 'w':
    case 's':
      for (int x = 0; x < 128; ++x) {
        const bool in = e == 'd'   ? std::isdigit(x) != 0
                        : e == 'w' ? (std::isalnum(x) != 0 || x == '_')
                                   : (x == ' ' || (x >= '\t' && x <= '\r'));
        if (in) set->ascii.set(static_cast<size_t>(x));
      }
      return -2;
    case 't':
      return '\t';
    case 'n':
      return '\n';
    case 'r':
      return '\r';
    case 'f':
      return '\f';
    case 'v':
      return '\v';
    case 'b':
      return '\b';
    case 'x':
    case 'u': {
      const size_t n = e == 'x' ? 2 : 4;
      const int v = i + n <= pattern.size() ? HexValue(pattern.substr(i, n)) : -1;
      if (v < 0 || v >= 128) return -3;
      i += n;
      return v;
    }
    default:
      return IsPunct(e) ? e : -3;
  }
}

// A positive class [...] starting at pattern[i] ('['), written for the raw
// JSON text: its characters that a JSON string escapes become alternatives
// in their escaped form. Sets *end past the ']'; "" if the class is not
// read here (the caller copies it as it was).
std::string PositiveClass(std::string_view pattern, size_t i, size_t* end) {
  ClassSet set;
  ++i;  // '['
  bool first = true;
  while (i < pattern.size() && (pattern[i] != ']' || first)) {
    first = false;
    const int a = ClassMember(pattern, i, &set);
    if (a == -3) return "";
    if (a < 0) continue;
    int b = a;
    if (i + 1 < pattern.size() && pattern[i] == '-' && pattern[i + 1] != ']') {
      ++i;
      b = ClassMember(pattern, i, &set);
      if (b < 0 || b < a) return "";
    }
    for (int x = a; x <= b; ++x) set.ascii.set(static_cast<size_t>(x));
  }
  if (i == pattern.size()) return "";  // no ']'
  *end = i + 1;
  bool special = false;
  for (int x = 0; x < 128; ++x) special = special || (set.ascii[x] && NeedsJsonEscape(x));
  std::string cls = "[";
  for (int x = 0; x < 128; ++x) {
    if (!set.ascii[x] || NeedsJsonEscape(x)) continue;
    int y = x;
    while (y + 1 < 128 && set.ascii[y + 1] && !NeedsJsonEscape(y + 1)) ++y;
    auto put = [&cls](int c) {
      if (std::isalnum(c)) {
        cls += static_cast<char>(c);
      } else {
        static const char* kHex = "0123456789ABCDEF";
        cls += std::string("\\x") + kHex[c >> 4] + kHex[c & 0xF];
      }
    };
    put(x);
    if (y > x) {
      cls += '-';
      put(y);
    }
    x = y;
  }
  cls += set.other + "]";
  if (!special) return cls;
  std::string out = "(?:";
  if (cls != "[]") out += cls + "|";
  for (int x = 0; x < 128; ++x) {
    if (set.ascii[x] && NeedsJsonEscape(x)) out += JsonEscaped(x) + "|";
  }
  out.back() = ')';
  return out;
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
      size_t end = 0;
      std::string positive;
      if (!in_class && c == '[' && !(i + 1 < pattern.size() && pattern[i + 1] == '^')) {
        positive = PositiveClass(pattern, i, &end);
      }
      if (!positive.empty()) {
        out += positive;
        i = end - 1;
      } else if (!in_class && NeedsJsonEscape(static_cast<unsigned char>(c))) {
        out += JsonEscaped(static_cast<unsigned char>(c));
      } else if (!in_class && c == '[') {
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
    if (!in_class) {
      // An escaped character a JSON string escapes too: as the text has it.
      size_t at = i - 1;
      ClassSet unused;
      // (\b outside a class is a word boundary, not a backspace.)
      const int code = e == 's' || e == 'b' ? -1 : ClassMember(pattern, at, &unused);
      if (e == 's') {
        size_t end = 0;
        out += PositiveClass("[\\s]", 0, &end);
        continue;
      }
      if (code >= 0 && NeedsJsonEscape(code)) {
        out += JsonEscaped(code);
        i = at - 1;
        continue;
      }
    }
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

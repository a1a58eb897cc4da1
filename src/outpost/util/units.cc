#include "outpost/util/units.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace outpost::util {
namespace {

// Splits "1.5GiB" into 1.5 and "gib" (lower-cased). False when no number leads.
bool SplitNumber(std::string_view text, double* number, std::string* suffix) {
  std::string s(text);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t start = 0;
  while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
  s = s.substr(start);
  if (s.empty()) return false;
  char* end = nullptr;
  *number = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || !std::isfinite(*number)) return false;
  suffix->clear();
  for (const char* p = end; *p; ++p) {
    if (!std::isspace(static_cast<unsigned char>(*p))) {
      suffix->push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(*p))));
    }
  }
  return true;
}

}  // namespace

StatusOr<uint64_t> ParseBytes(std::string_view text) {
  double n = 0;
  std::string suf;
  if (!SplitNumber(text, &n, &suf)) {
    return Status::InvalidArgument("'" + std::string(text) + "' is not a size (e.g. 8GiB, 512MiB)");
  }
  if (n < 0) return Status::InvalidArgument("size '" + std::string(text) + "' is negative");
  double mult = 0;
  if (suf.empty() || suf == "b")
    mult = 1;
  else if (suf == "k" || suf == "kib")
    mult = 1024.0;
  else if (suf == "m" || suf == "mib")
    mult = 1024.0 * 1024;
  else if (suf == "g" || suf == "gib")
    mult = 1024.0 * 1024 * 1024;
  else if (suf == "t" || suf == "tib")
    mult = 1024.0 * 1024 * 1024 * 1024;
  else if (suf == "kb")
    mult = 1e3;
  else if (suf == "mb")
    mult = 1e6;
  else if (suf == "gb")
    mult = 1e9;
  else if (suf == "tb")
    mult = 1e12;
  else {
    return Status::InvalidArgument("unknown size unit '" + suf + "' in '" + std::string(text) +
                                   "' (use B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)");
  }
  return static_cast<uint64_t>(std::llround(n * mult));
}

StatusOr<int64_t> ParseDurationMs(std::string_view text) {
  double n = 0;
  std::string suf;
  if (!SplitNumber(text, &n, &suf)) {
    return Status::InvalidArgument("'" + std::string(text) +
                                   "' is not a duration (e.g. 30s, 250ms)");
  }
  if (n < 0) return Status::InvalidArgument("duration '" + std::string(text) + "' is negative");
  double mult = 0;
  if (suf == "ms")
    mult = 1;
  else if (suf.empty() || suf == "s")
    mult = 1000;
  else if (suf == "m" || suf == "min")
    mult = 60'000;
  else if (suf == "h")
    mult = 3'600'000;
  else if (suf == "d")
    mult = 86'400'000;
  else {
    return Status::InvalidArgument("unknown duration unit '" + suf + "' in '" + std::string(text) +
                                   "' (use ms, s, m, h, d)");
  }
  return static_cast<int64_t>(std::llround(n * mult));
}

std::string FormatBytes(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else
    std::snprintf(buf, sizeof buf, "%.2f %s", v, kUnits[u]);
  return buf;
}

StatusOr<int64_t> PositiveDurationMsFlag(std::string_view flag, std::string_view text) {
  auto ms = ParseDurationMs(text);
  if (!ms.ok() || *ms <= 0) {
    return Status::InvalidArgument(std::string(flag) + ": '" + std::string(text) +
                                       "' is not a positive duration (e.g. 90s, 250ms)",
                                   std::string(flag));
  }
  return *ms;
}

StatusOr<uint64_t> PositiveBytesFlag(std::string_view flag, std::string_view text) {
  auto bytes = ParseBytes(text);
  if (!bytes.ok() || *bytes == 0) {
    return Status::InvalidArgument(
        std::string(flag) + ": '" + std::string(text) + "' is not a positive size (e.g. 16GiB)",
        std::string(flag));
  }
  return *bytes;
}

std::string FormatNumber(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

}  // namespace outpost::util

// Parsing and printing of byte sizes and durations as people write them in
// config files and flags ("8GiB", "512MB", "30s", "250ms"). Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "outpost/util/status.h"

namespace outpost::util {

// "1024", "64KiB", "1.5GiB", "512MB", "2G" (G = GiB, as in free(1)). Errors name the input.
StatusOr<uint64_t> ParseBytes(std::string_view text);

// "250ms", "30s", "5m", "1h", "30d", bare number = seconds. Returns milliseconds.
StatusOr<int64_t> ParseDurationMs(std::string_view text);

// The same for command-line flags: a positive value, or InvalidArgument
// "<flag>: '<text>' is not a positive duration (e.g. 90s, 250ms)" (size: e.g.
// 16GiB) with `flag` as the param.
StatusOr<int64_t> PositiveDurationMsFlag(std::string_view flag, std::string_view text);
StatusOr<uint64_t> PositiveBytesFlag(std::string_view flag, std::string_view text);

// printf of one number ("%.1f", 3.14159 → "3.1"), for reports and tables.
std::string FormatNumber(const char* fmt, double v);

// 1536 → "1.50 KiB"; uses binary units.
std::string FormatBytes(uint64_t bytes);

}  // namespace outpost::util

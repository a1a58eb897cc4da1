#include "outpost/util/utf8.h"

#include <cstdint>

namespace outpost::util {
namespace {

// Length of the sequence a lead byte announces, 0 for a continuation or invalid byte.
int SequenceLength(uint8_t b) {
  if (b < 0x80) return 1;
  if ((b & 0xE0) == 0xC0) return 2;
  if ((b & 0xF0) == 0xE0) return 3;
  if ((b & 0xF8) == 0xF0) return 4;
  return 0;
}

}  // namespace

size_t IncompleteUtf8Tail(std::string_view s) {
  // Walk back over at most 3 continuation bytes to the lead byte.
  const size_t n = s.size();
  for (size_t back = 1; back <= 4 && back <= n; ++back) {
    const auto b = static_cast<uint8_t>(s[n - back]);
    if ((b & 0xC0) == 0x80) continue;  // continuation byte: keep looking
    const int need = SequenceLength(b);
    if (need == 0) return 0;  // invalid lead: nothing to wait for
    return static_cast<size_t>(need) > back ? back : 0;
  }
  return 0;
}

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const int need = SequenceLength(static_cast<uint8_t>(s[i]));
    if (need == 0 || i + need > s.size()) return false;
    for (int k = 1; k < need; ++k) {
      if ((static_cast<uint8_t>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += need;
  }
  return true;
}

}  // namespace outpost::util

// Random — the one source of randomness for code that needs it (request ids;
// next, canary splits and retry jitter), injected like util::Clock so tests
// can fix the sequence.
//
// Thread-safety: implementations are safe to call from any thread.
#pragma once

#include <cstdint>
#include <string>

namespace outpost::util {

class Random {
 public:
  virtual ~Random() = default;
  // A uniformly distributed 64-bit value.
  virtual uint64_t Next() = 0;
};

// Seeded from the OS once; a generator per thread, so callers never contend.
Random& RealRandom();

// prefix + 24 letters and digits: an id clients see ("chatcmpl-…", "file-…").
std::string RandomId(const std::string& prefix, Random& random);

}  // namespace outpost::util

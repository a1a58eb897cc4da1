// SeededRandom — a util::Random whose sequence a test fixes.
#pragma once

#include <mutex>
#include <random>

#include "outpost/util/random.h"

namespace outpost::testing {

class SeededRandom final : public util::Random {
 public:
  explicit SeededRandom(uint64_t seed) : rng_(seed) {}
  uint64_t Next() override {
    std::lock_guard<std::mutex> lock(mu_);
    return rng_();
  }

 private:
  std::mutex mu_;
  std::mt19937_64 rng_;
};

}  // namespace outpost::testing

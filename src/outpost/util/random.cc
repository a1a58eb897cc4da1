#include "outpost/util/random.h"

#include <random>

namespace outpost::util {
namespace {

class ThreadLocalRandom final : public Random {
 public:
  uint64_t Next() override {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    return rng();
  }
};

}  // namespace

Random& RealRandom() {
  static ThreadLocalRandom random;
  return random;
}

}  // namespace outpost::util

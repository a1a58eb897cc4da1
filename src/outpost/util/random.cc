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

std::string RandomId(const std::string& prefix, Random& random) {
  static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  constexpr uint64_t kLetters = sizeof(kAlphabet) - 1;  // 62
  std::string id = prefix;
  // 24 characters from three draws of 8 (62^8 < 2^48: the modulo bias is nil).
  for (int draw = 0; draw < 3; ++draw) {
    uint64_t bits = random.Next();
    for (int i = 0; i < 8; ++i) {
      id += kAlphabet[bits % kLetters];
      bits /= kLetters;
    }
  }
  return id;
}

}  // namespace outpost::util

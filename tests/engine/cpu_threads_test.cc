// CpuThreadWarnings (engine/context.h): more threads than usable CPUs, and
// OpenMP wait settings that make llama.cpp's threads sleep at its barriers,
// are named at start; usual settings give no warning.
#include <gtest/gtest.h>

#include "outpost/engine/context.h"

namespace outpost::engine {
namespace {

std::vector<std::string> Warn(int32_t threads, int32_t threads_batch, int usable,
                              const char* policy = nullptr, const char* spin = nullptr,
                              bool openmp = true) {
  return CpuThreadWarnings(threads, threads_batch, usable, openmp, policy, spin);
}

TEST(CpuThreadWarnings, UsualSettingsSayNothing) {
  EXPECT_TRUE(Warn(0, 0, 2).empty());
  EXPECT_TRUE(Warn(2, 2, 2).empty());
  EXPECT_TRUE(Warn(1, 0, 4, "active", nullptr).empty());
  EXPECT_TRUE(Warn(0, 0, 2, "ACTIVE", "30000").empty());
  EXPECT_TRUE(Warn(0, 0, 2, nullptr, "1000").empty());
  EXPECT_TRUE(Warn(0, 0, 2, nullptr, "10k").empty());
  EXPECT_TRUE(Warn(0, 0, 2, nullptr, "INFINITE").empty());
  // A spin count set wins over a passive policy, as in libgomp.
  EXPECT_TRUE(Warn(0, 0, 2, "passive", "300000").empty());
}

TEST(CpuThreadWarnings, MoreThreadsThanUsableCpus) {
  const auto w = Warn(4, 0, 2);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("threads 4 is more than the 2 CPUs this process may use"), std::string::npos)
      << w[0];
  EXPECT_NE(w[0].find("set it to 0 (= 2)"), std::string::npos) << w[0];
  const auto both = Warn(3, 8, 1);
  ASSERT_EQ(both.size(), 2u);
  EXPECT_NE(both[0].find("threads 3 is more than the 1 CPU "), std::string::npos) << both[0];
  EXPECT_NE(both[1].find("threads_batch 8 is more than the 1 CPU "), std::string::npos) << both[1];
}

TEST(CpuThreadWarnings, SleepingOpenMpThreads) {
  for (const char* policy : {"passive", "PASSIVE", "Passive"}) {
    const auto w = Warn(0, 0, 2, policy);
    ASSERT_EQ(w.size(), 1u) << policy;
    EXPECT_NE(w[0].find(std::string("OMP_WAIT_POLICY=") + policy), std::string::npos) << w[0];
  }
  for (const char* spin : {"0", "999", "0k"}) {
    const auto w = Warn(0, 0, 2, nullptr, spin);
    ASSERT_EQ(w.size(), 1u) << spin;
    EXPECT_NE(w[0].find(std::string("GOMP_SPINCOUNT=") + spin), std::string::npos) << w[0];
  }
  // Not a spin count libgomp reads: the policy decides.
  EXPECT_EQ(Warn(0, 0, 2, "passive", "lots").size(), 1u);
  EXPECT_TRUE(Warn(0, 0, 2, nullptr, "lots").empty());
  EXPECT_TRUE(Warn(0, 0, 2, nullptr, "5x").empty());
}

TEST(CpuThreadWarnings, OpenMpSettingsMeanNothingWithoutOpenMp) {
  EXPECT_TRUE(Warn(0, 0, 2, "passive", "0", /*openmp=*/false).empty());
  EXPECT_EQ(Warn(4, 0, 2, "passive", nullptr, /*openmp=*/false).size(), 1u);
}

TEST(CpuThreadWarnings, ThisProcessUnderItsOwnEnvironment) {
  // The real inputs: no oversubscription at the default thread counts.
  for (const std::string& w : CpuThreadWarnings(0, 0)) {
    EXPECT_EQ(w.find("is more than"), std::string::npos) << w;
  }
}

}  // namespace
}  // namespace outpost::engine

// UsableCpus (util/cpus.h): the process's own budget against what the
// kernel says of its affinity, and how it is described. The cgroup quota is
// read by util/cgroup.h (cgroup_test.cc).
#include "outpost/util/cpus.h"

#include <gtest/gtest.h>
#include <sched.h>

namespace outpost::util {
namespace {

TEST(UsableCpus, AtMostTheAffinityMaskAndTheQuota) {
  const CpuBudget& b = UsableCpus();
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_EQ(b.affinity, CPU_COUNT(&set));
  EXPECT_GE(b.usable, 1);
  EXPECT_LE(b.usable, b.affinity);
  if (b.quota) {
    EXPECT_LE(b.usable, static_cast<int>(*b.quota) + 1);
  }
  EXPECT_EQ(&b, &UsableCpus());  // computed once
}

TEST(UsableCpus, DescribeNamesWhatLimitsIt) {
  CpuBudget b;
  b.online = 16;
  b.affinity = 4;
  b.quota = 1.5;
  b.usable = 2;
  EXPECT_EQ(b.Describe(), "2 CPUs (of 16 online: affinity 4, cgroup quota 1.5)");
  b = CpuBudget{2, 2, std::nullopt, 2};
  EXPECT_EQ(b.Describe(), "2 CPUs");
}

}  // namespace
}  // namespace outpost::util

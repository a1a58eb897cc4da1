// UsableCpus (util/cpus.h): the cgroup CPU quota read from fake cgroup v1
// and v2 trees as docker, podman and systemd lay them out, and the
// process's own budget against what the kernel says of its affinity.
#include "outpost/util/cpus.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace outpost::util {
namespace {

class CgroupTree : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("outpost-cgroup-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void Write(const std::string& rel, const std::string& text) {
    const std::filesystem::path p = root_ / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text << "\n";
  }
  std::optional<double> Quota(const std::string& proc_self_cgroup) {
    return CgroupCpuQuota(root_.string(), proc_self_cgroup);
  }
  std::filesystem::path root_;
};

TEST_F(CgroupTree, V2QuotaOfTheProcesssCgroup) {
  Write("cgroup.controllers", "cpuset cpu io memory pids");
  Write("cpu.max", "max 100000");
  Write("system.slice/outpost.service/cpu.max", "150000 100000");  // CPUQuota=150%
  EXPECT_EQ(Quota("0::/system.slice/outpost.service\n"), 1.5);
}

TEST_F(CgroupTree, V2SmallestAlongThePathWins) {
  Write("cgroup.controllers", "cpu");
  Write("machine.slice/cpu.max", "200000 100000");
  Write("machine.slice/libpod-1/cpu.max", "max 100000");
  Write("machine.slice/libpod-1/app/cpu.max", "400000 100000");
  EXPECT_EQ(Quota("0::/machine.slice/libpod-1/app\n"), 2.0);
}

TEST_F(CgroupTree, V2InsideAContainerNamespaceReadsTheRoot) {
  // docker --cpus=2.5 with a cgroup namespace: the process sees itself at "/".
  Write("cgroup.controllers", "cpu");
  Write("cpu.max", "250000 100000");
  EXPECT_EQ(Quota("0::/\n"), 2.5);
}

TEST_F(CgroupTree, V2WithoutAQuotaIsNone) {
  Write("cgroup.controllers", "cpu");
  Write("cpu.max", "max 100000");
  Write("user.slice/cpu.max", "max 100000");
  EXPECT_FALSE(Quota("0::/user.slice\n").has_value());
}

TEST_F(CgroupTree, V1CpuControllerUnderItsJoinedName) {
  Write("cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "50000");
  Write("cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000");
  Write("cpu,cpuacct/cpu.cfs_quota_us", "-1");
  Write("cpu,cpuacct/cpu.cfs_period_us", "100000");
  EXPECT_EQ(Quota("12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/\n"), 0.5);
}

TEST_F(CgroupTree, V1ContainerWithoutANamespaceFallsBackToTheMountRoot) {
  // Docker on v1: /proc/self/cgroup names the host's path, the mount shows
  // the container's own cgroup at its root.
  Write("cpu/cpu.cfs_quota_us", "300000");
  Write("cpu/cpu.cfs_period_us", "100000");
  EXPECT_EQ(Quota("1:cpu:/docker/0123abcd\n"), 3.0);
}

TEST_F(CgroupTree, NothingReadableIsNone) {
  EXPECT_FALSE(Quota("").has_value());
  EXPECT_FALSE(Quota("garbage without colons\n").has_value());
  Write("cpu/cpu.cfs_quota_us", "lots");
  Write("cpu/cpu.cfs_period_us", "100000");
  EXPECT_FALSE(Quota("1:cpu:/\n").has_value());
  // v2 line but no v2 hierarchy mounted here (a v1/hybrid host).
  Write("cpu.max", "100000 100000");
  EXPECT_FALSE(Quota("0::/\n").has_value());
}

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

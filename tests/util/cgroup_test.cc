// util/cgroup.h: CPU quota and memory limit read from fake cgroup v1 and v2
// trees as docker, podman and systemd lay them out. (A real v1 cgroup is
// made by tests/integration/test_cpus.py where the machine allows it.)
#include "outpost/util/cgroup.h"

#include <gtest/gtest.h>
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
  std::optional<uint64_t> Memory(const std::string& proc_self_cgroup) {
    return CgroupMemoryLimit(root_.string(), proc_self_cgroup);
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

constexpr uint64_t kMiB = 1 << 20;

TEST_F(CgroupTree, V2MemoryOfASystemdUnit) {
  // outpost.service with MemoryMax=999M and MemoryHigh=799M; the root sets none.
  Write("cgroup.controllers", "cpu memory");
  Write("system.slice/memory.max", "max");
  Write("system.slice/outpost.service/memory.max", std::to_string(999 * kMiB));
  Write("system.slice/outpost.service/memory.high", std::to_string(799 * kMiB));
  EXPECT_EQ(Memory("0::/system.slice/outpost.service\n"), 799 * kMiB);
  Write("system.slice/outpost.service/memory.high", "max");
  EXPECT_EQ(Memory("0::/system.slice/outpost.service\n"), 999 * kMiB);
}

TEST_F(CgroupTree, V2MemoryOfAParentSliceWins) {
  Write("cgroup.controllers", "memory");
  Write("machine.slice/memory.max", std::to_string(2048 * kMiB));
  Write("machine.slice/libpod-1/memory.max", "max");
  EXPECT_EQ(Memory("0::/machine.slice/libpod-1\n"), 2048 * kMiB);
  Write("cpu.max", "max 100000");  // unrelated files change nothing
  EXPECT_EQ(Memory("0::/machine.slice/libpod-1\n"), 2048 * kMiB);
}

TEST_F(CgroupTree, V2MemoryInsideAContainerNamespace) {
  Write("cgroup.controllers", "memory");
  Write("memory.max", std::to_string(512 * kMiB));  // docker --memory 512m
  EXPECT_EQ(Memory("0::/\n"), 512 * kMiB);
  Write("memory.max", "max");
  EXPECT_FALSE(Memory("0::/\n").has_value());
}

TEST_F(CgroupTree, V1MemoryLimitAndItsNoneValue) {
  Write("memory/memory.limit_in_bytes", "9223372036854771712");  // none
  Write("memory/docker/abc/memory.limit_in_bytes", std::to_string(700 * kMiB));
  EXPECT_EQ(Memory("4:memory:/docker/abc\n1:cpu:/\n"), 700 * kMiB);
  EXPECT_FALSE(Memory("4:memory:/\n").has_value());
  // The memory line is what counts; a cpu line does not read memory files.
  EXPECT_FALSE(Memory("1:cpu:/docker/abc\n").has_value());
}

TEST_F(CgroupTree, V1MemoryInAContainerWithoutANamespace) {
  Write("memory/memory.limit_in_bytes", std::to_string(300 * kMiB));
  EXPECT_EQ(Memory("9:memory:/kubepods/pod1/abc\n"), 300 * kMiB);
}

TEST_F(CgroupTree, UnreadableMemoryValuesAreNone) {
  Write("memory/memory.limit_in_bytes", "a lot");
  EXPECT_FALSE(Memory("4:memory:/\n").has_value());
  Write("memory/memory.limit_in_bytes", "-1");
  EXPECT_FALSE(Memory("4:memory:/\n").has_value());
  Write("memory/memory.limit_in_bytes", "99999999999999999999999");
  EXPECT_FALSE(Memory("4:memory:/\n").has_value());
}

TEST(ProcSelfCgroup, NamesAHierarchy) {
  const std::string text = ProcSelfCgroup();
  EXPECT_NE(text.find(':'), std::string::npos) << text;
}

}  // namespace
}  // namespace outpost::util

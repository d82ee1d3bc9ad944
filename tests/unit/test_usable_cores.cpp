// The cores a process may use: its affinity mask, limited by its cgroup's CPU quota, read here
// from fake cgroup trees; and the executor's default pool, sized to them.
#include "executor/usable_cores.hpp"

#include <doctest/doctest.h>

#include <sonic/executor.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include <unistd.h>

namespace fs = std::filesystem;
using sonic::detail::cgroup_cpu_limit;
using sonic::detail::cores_of_cfs;
using sonic::detail::cores_of_cpu_max;
using sonic::detail::usable_cores_of;

namespace {

// A fake /sys/fs/cgroup, removed at the end of the test.
class FakeCgroupRoot {
 public:
  FakeCgroupRoot()
      : root_(fs::temp_directory_path() /
              ("sonic-cgroup-" + std::to_string(::getpid()) + "-" + std::to_string(++count_))) {
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  ~FakeCgroupRoot() { fs::remove_all(root_); }
  FakeCgroupRoot(const FakeCgroupRoot&) = delete;
  FakeCgroupRoot& operator=(const FakeCgroupRoot&) = delete;

  // Writes `text` to `path` under the root, making its directories.
  void write(const std::string& path, const std::string& text) const {
    const fs::path file = root_ / path;
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
  }
  std::string path() const { return root_.string(); }

 private:
  static inline int count_ = 0;
  fs::path root_;
};

}  // namespace

TEST_CASE("cgroup v2 cpu.max: quota over period, rounded up; \"max\" is no limit") {
  CHECK(cores_of_cpu_max("max 100000\n") == std::nullopt);
  CHECK(cores_of_cpu_max("100000 100000\n") == 1);
  CHECK(cores_of_cpu_max("150000 100000\n") == 2);
  CHECK(cores_of_cpu_max("50000 100000") == 1);  // half a core: one thread still runs
  CHECK(cores_of_cpu_max("800000 100000") == 8);
  CHECK(cores_of_cpu_max("") == std::nullopt);
  CHECK(cores_of_cpu_max("150000") == std::nullopt);
  CHECK(cores_of_cpu_max("x 100000") == std::nullopt);
  CHECK(cores_of_cpu_max("150000 0") == std::nullopt);
}

TEST_CASE("cgroup v1 cfs quota: -1 is no limit") {
  CHECK(cores_of_cfs("-1\n", "100000\n") == std::nullopt);
  CHECK(cores_of_cfs("250000\n", "100000\n") == 3);
  CHECK(cores_of_cfs("200000", "100000") == 2);
  CHECK(cores_of_cfs("", "100000") == std::nullopt);
}

TEST_CASE("cgroup v2: the tightest quota of the process's cgroup and its ancestors") {
  FakeCgroupRoot root;
  root.write("slurm/job_7/cpu.max", "400000 100000\n");
  root.write("slurm/job_7/step_0/cpu.max", "max 100000\n");
  CHECK(cgroup_cpu_limit("0::/slurm/job_7/step_0\n", root.path()) == 4);
  root.write("slurm/job_7/step_0/cpu.max", "150000 100000\n");
  CHECK(cgroup_cpu_limit("0::/slurm/job_7/step_0\n", root.path()) == 2);
  CHECK(cgroup_cpu_limit("0::/elsewhere\n", root.path()) == std::nullopt);
}

TEST_CASE("cgroup v2: a container that sees its own cgroup at the root") {
  FakeCgroupRoot root;
  root.write("cpu.max", "300000 100000\n");
  CHECK(cgroup_cpu_limit("0::/kubepods/burstable/pod1/abc\n", root.path()) == 3);
}

TEST_CASE("cgroup v1: the cpu controller's cfs quota, whatever it is mounted with") {
  FakeCgroupRoot root;
  root.write("cpu,cpuacct/condor/slot1/cpu.cfs_quota_us", "200000\n");
  root.write("cpu,cpuacct/condor/slot1/cpu.cfs_period_us", "100000\n");
  root.write("memory/condor/slot1/cpu.cfs_quota_us", "100000\n");  // not the cpu controller
  root.write("memory/condor/slot1/cpu.cfs_period_us", "100000\n");
  CHECK(cgroup_cpu_limit("5:memory:/condor/slot1\n4:cpu,cpuacct:/condor/slot1\n", root.path()) ==
        2);
  // The same hierarchy, linked as "cpu" only.
  FakeCgroupRoot cpu_only;
  cpu_only.write("cpu/condor/slot1/cpu.cfs_quota_us", "-1\n");
  cpu_only.write("cpu/condor/slot1/cpu.cfs_period_us", "100000\n");
  cpu_only.write("cpu/condor/cpu.cfs_quota_us", "350000\n");
  cpu_only.write("cpu/condor/cpu.cfs_period_us", "100000\n");
  CHECK(cgroup_cpu_limit("4:cpu,cpuacct:/condor/slot1\n", cpu_only.path()) == 4);
  CHECK(cgroup_cpu_limit("4:cpuacct:/condor/slot1\n", cpu_only.path()) == std::nullopt);
}

TEST_CASE("cgroup hybrid layout: v1 controllers and the v2 tree under unified/") {
  FakeCgroupRoot root;
  root.write("cpu/cpu.cfs_quota_us", "-1\n");
  root.write("cpu/cpu.cfs_period_us", "100000\n");
  root.write("unified/user.slice/cpu.max", "100000 100000\n");
  CHECK(cgroup_cpu_limit("9:name=systemd:/\n1:cpu:/\n0::/user.slice\n", root.path()) == 1);
}

TEST_CASE("cgroup: no files, no lines, odd lines: no limit") {
  FakeCgroupRoot root;
  CHECK(cgroup_cpu_limit("0::/a\n1:cpu:/b\n", root.path()) == std::nullopt);
  CHECK(cgroup_cpu_limit("", root.path()) == std::nullopt);
  CHECK(cgroup_cpu_limit("garbage\n\n::\n", root.path()) == std::nullopt);
}

TEST_CASE("usable cores: the affinity mask, limited by the quota, at least 1") {
  CHECK(usable_cores_of(64, 2) == 2);
  CHECK(usable_cores_of(2, 8) == 2);
  CHECK(usable_cores_of(4, std::nullopt) == 4);
  CHECK(usable_cores_of(0, std::nullopt) == 1);
  CHECK(usable_cores_of(0, 3) == 3);
  CHECK(sonic::detail::affinity_cores() >= 1);
  CHECK(sonic::usable_cores() >= 1);
  CHECK(sonic::usable_cores() <= sonic::detail::affinity_cores());
}

// Run by ctest under `taskset -c LIST` with SONIC_EXPECT_AFFINITY set to the CPUs of LIST
// (tests/unit/CMakeLists.txt): the executor's default pool has that many threads, or the
// cgroup's quota if it is tighter, not one per hardware thread of the machine.
TEST_CASE("the executor's default pool has the cores the process was given") {
  const char* expected = std::getenv("SONIC_EXPECT_AFFINITY");
  if (!expected) {
    MESSAGE("not run: SONIC_EXPECT_AFFINITY is unset (ctest runs this under taskset)");
    return;
  }
  std::ifstream proc("/proc/self/cgroup");
  const std::string text((std::istreambuf_iterator<char>(proc)), std::istreambuf_iterator<char>());
  const auto cores =
      usable_cores_of(std::stoul(expected), cgroup_cpu_limit(text, "/sys/fs/cgroup"));
  CHECK(sonic::usable_cores() == cores);
  sonic::CpuExecutor executor;
  CHECK(executor.threads() == cores);
  CHECK(sonic::CpuExecutor(sonic::CpuExecutorOptions{}).threads() == cores);
}

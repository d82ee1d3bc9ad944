// sonic — the cores this process may use (sonic::usable_cores(), include/sonic/executor.hpp):
// its CPU affinity mask, limited by its cgroup's CPU quota. A grid job is given a few cores of a
// node of 64 or more, by affinity (taskset, a batch system's cpuset) or by quota (a container's
// --cpus, a slot's cgroup); the executor's default pool is sized to that, never to the node. The
// cgroup files are read from roots given here, so that tests can hand in fake ones.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "sonic/detail/export.hpp"

namespace sonic::detail {

/// The CPUs of the calling thread's affinity mask (sched_getaffinity), with masks larger than
/// the default cpu_set_t (nodes of more than 1024 CPUs); 0 when it cannot be read.
SONIC_EXPORT std::size_t affinity_cores();

/// The cores a cgroup v2 `cpu.max` ("QUOTA PERIOD", or "max PERIOD": no limit) allows, rounded
/// up and at least 1; nothing for no limit or text it does not understand.
SONIC_EXPORT std::optional<std::size_t> cores_of_cpu_max(std::string_view cpu_max);

/// The same for cgroup v1's `cpu.cfs_quota_us` (-1: no limit) and `cpu.cfs_period_us`.
SONIC_EXPORT std::optional<std::size_t> cores_of_cfs(std::string_view quota_us,
                                                     std::string_view period_us);

/// The CPU quota of the cgroups a process is in, in cores rounded up: `proc_cgroup` is the text
/// of its /proc/self/cgroup, `cgroup_root` where the hierarchies are mounted (/sys/fs/cgroup).
/// cgroup v2 ("0::/path") reads `cpu.max` under the root itself or under `unified/` (the hybrid
/// layout); v1 (a line whose controllers include "cpu") reads `cpu.cfs_quota_us` and
/// `cpu.cfs_period_us` under the controllers' directory ("cpu,cpuacct", or "cpu"). Every cgroup
/// from the process's own up to the root counts, as the kernel enforces each: the tightest wins.
/// A path that is not there (a container that sees its own cgroup at the root) is looked for at
/// its ancestors. Nothing when no quota applies.
SONIC_EXPORT std::optional<std::size_t> cgroup_cpu_limit(std::string_view proc_cgroup,
                                                         const std::string& cgroup_root);

/// min(affinity, quota), at least 1: what sonic::usable_cores() returns, from its parts.
SONIC_EXPORT std::size_t usable_cores_of(std::size_t affinity, std::optional<std::size_t> quota);

}  // namespace sonic::detail

// sonic — the cores this process may use: its affinity mask, limited by its cgroup's CPU quota.
#include "executor/usable_cores.hpp"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <memory>
#include <thread>
#include <vector>

#include "sonic/executor.hpp"

namespace sonic::detail {

namespace {

std::string_view trimmed(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

// A whole decimal integer, sign allowed (cgroup v1 writes "-1" for no quota).
std::optional<std::int64_t> integer_of(std::string_view text) {
  text = trimmed(text);
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// quota / period cores, rounded up: a quota of 1.5 cores still lets 2 threads run at a time,
// each for part of every period.
std::optional<std::size_t> cores_of(std::int64_t quota, std::int64_t period) {
  if (quota <= 0 || period <= 0) return std::nullopt;
  return static_cast<std::size_t>(quota / period + (quota % period != 0 ? 1 : 0));
}

// The file's text; nothing when it cannot be read (absent: no such controller or cgroup).
std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The tighter of two limits.
void tighten(std::optional<std::size_t>& limit, std::optional<std::size_t> other) {
  if (other && (!limit || *other < *limit)) limit = other;
}

// `path` ("/a/b") and each of its ancestors up to "/", as "/a/b", "/a", "".
std::vector<std::string> self_and_ancestors(std::string_view path) {
  std::vector<std::string> all;
  std::string at(trimmed(path));
  while (!at.empty() && at.back() == '/') at.pop_back();
  for (;;) {
    all.push_back(at);
    if (at.empty()) return all;
    at.erase(at.rfind('/') == std::string::npos ? 0 : at.rfind('/'));
  }
}

// The tightest quota `read` finds in `base`'s copy of the cgroup at `path` and its ancestors.
template <typename Read>
std::optional<std::size_t> walk_up(const std::string& base, std::string_view path, Read read) {
  std::optional<std::size_t> limit;
  for (const auto& dir : self_and_ancestors(path)) tighten(limit, read(base + dir));
  return limit;
}

}  // namespace

std::size_t affinity_cores() {
  // A mask of CPU_SETSIZE (1024) CPUs is too small for larger nodes: the call then fails with
  // EINVAL, and a larger one is tried.
  for (std::size_t cpus = CPU_SETSIZE; cpus <= (std::size_t{1} << 22); cpus *= 2) {
    std::unique_ptr<cpu_set_t, void (*)(cpu_set_t*)> set(CPU_ALLOC(cpus),
                                                         [](cpu_set_t* s) { CPU_FREE(s); });
    if (!set) return 0;
    const std::size_t bytes = CPU_ALLOC_SIZE(cpus);
    CPU_ZERO_S(bytes, set.get());
    if (sched_getaffinity(0, bytes, set.get()) == 0) {
      return static_cast<std::size_t>(CPU_COUNT_S(bytes, set.get()));
    }
    if (errno != EINVAL) return 0;
  }
  return 0;
}

std::optional<std::size_t> cores_of_cpu_max(std::string_view cpu_max) {
  cpu_max = trimmed(cpu_max);
  const auto space = cpu_max.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const auto quota = integer_of(cpu_max.substr(0, space));  // "max": none
  const auto period = integer_of(cpu_max.substr(space + 1));
  if (!quota || !period) return std::nullopt;
  return cores_of(*quota, *period);
}

std::optional<std::size_t> cores_of_cfs(std::string_view quota_us, std::string_view period_us) {
  const auto quota = integer_of(quota_us);  // -1: none
  const auto period = integer_of(period_us);
  if (!quota || !period) return std::nullopt;
  return cores_of(*quota, *period);
}

std::optional<std::size_t> cgroup_cpu_limit(std::string_view proc_cgroup,
                                            const std::string& cgroup_root) {
  std::optional<std::size_t> limit;
  while (!proc_cgroup.empty()) {
    // "ID:CONTROLLERS:PATH", one per line (the path may hold colons: it is the rest).
    const auto end = std::min(proc_cgroup.find('\n'), proc_cgroup.size());
    const std::string_view line = proc_cgroup.substr(0, end);
    proc_cgroup.remove_prefix(std::min(end + 1, proc_cgroup.size()));
    const auto first = line.find(':');
    const auto second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    const std::string_view id = line.substr(0, first);
    const std::string_view controllers = line.substr(first + 1, second - first - 1);
    const std::string_view path = line.substr(second + 1);
    if (id == "0" && controllers.empty()) {  // cgroup v2
      auto cpu_max = [](const std::string& dir) -> std::optional<std::size_t> {
        const auto text = read_file(dir + "/cpu.max");
        return text ? cores_of_cpu_max(*text) : std::nullopt;
      };
      tighten(limit, walk_up(cgroup_root, path, cpu_max));
      tighten(limit, walk_up(cgroup_root + "/unified", path, cpu_max));
      continue;
    }
    bool cpu = false;  // a v1 hierarchy with the cpu controller ("cpu", "cpu,cpuacct")
    for (std::string_view rest = controllers; !rest.empty();) {
      const auto comma = std::min(rest.find(','), rest.size());
      cpu = cpu || rest.substr(0, comma) == "cpu";
      rest.remove_prefix(std::min(comma + 1, rest.size()));
    }
    if (!cpu) continue;
    auto cfs = [](const std::string& dir) -> std::optional<std::size_t> {
      const auto quota = read_file(dir + "/cpu.cfs_quota_us");
      const auto period = read_file(dir + "/cpu.cfs_period_us");
      return quota && period ? cores_of_cfs(*quota, *period) : std::nullopt;
    };
    tighten(limit, walk_up(cgroup_root + "/" + std::string(controllers), path, cfs));
    if (controllers != "cpu") tighten(limit, walk_up(cgroup_root + "/cpu", path, cfs));
  }
  return limit;
}

std::size_t usable_cores_of(std::size_t affinity, std::optional<std::size_t> quota) {
  std::size_t cores = affinity;
  if (quota && (cores == 0 || *quota < cores)) cores = *quota;
  return std::max<std::size_t>(cores, 1);
}

}  // namespace sonic::detail

namespace sonic {

std::size_t usable_cores() {
  std::size_t affinity = detail::affinity_cores();
  if (affinity == 0) affinity = std::thread::hardware_concurrency();  // 0 too: unknown
  const auto proc_cgroup = detail::read_file("/proc/self/cgroup");
  return detail::usable_cores_of(
      affinity,
      proc_cgroup ? detail::cgroup_cpu_limit(*proc_cgroup, "/sys/fs/cgroup") : std::nullopt);
}

}  // namespace sonic

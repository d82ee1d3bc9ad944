// The metrics port's page: the executor's per-model statistics and the host's CPU and memory in
// Prometheus' text exposition format (version 0.0.4), under the names, types, labels and meanings
// Triton's metrics endpoint uses, so that dashboards, alerts and autoscalers written for Triton
// read a sonic-server unchanged.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sonic/metadata.hpp"

namespace sonic::server {

/// The host's CPU and memory as Triton's CPU metrics report them; a value that could not be
/// read (no /proc) is left out of the page rather than reported as 0.
struct HostUsage {
  std::optional<double> cpu_utilization;  ///< busy share of all CPUs, 0 to 1
  std::optional<std::uint64_t> memory_total_bytes;
  std::optional<std::uint64_t> memory_used_bytes;
};

/// The page for `models` (one entry per model version) and `host`.
std::string render_metrics(const std::vector<ModelStatistics>& models, const HostUsage& host);

/// A label value as the exposition format writes it between its quotes: backslash, double quote
/// and line feed escaped (\\, \", \n), everything else as is.
std::string escape_label_value(std::string_view value);

/// Reads the host's CPU utilization from /proc/stat and memory from /proc/meminfo. The CPU share
/// is measured between one read and the next (the first, since boot), as Triton measures it
/// between its polls. Thread-safe.
class HostUsageReader {
 public:
  HostUsage read();

  /// The busy share between two /proc/stat "cpu" lines (its first ten fields, in jiffies): idle
  /// and iowait count as not busy. Empty when no time passed or a line does not parse.
  static std::optional<double> cpu_share(std::string_view before, std::string_view after);
  /// MemTotal and MemTotal - MemAvailable of a /proc/meminfo text, in bytes.
  static void parse_meminfo(std::string_view text, HostUsage& usage);

 private:
  std::mutex mutex_;
  std::string last_cpu_line_ = "cpu 0 0 0 0 0 0 0 0 0 0";  // boot
  double last_share_ = 0;
};

}  // namespace sonic::server

// Counters the kernel keeps, read by the measuring programs (sonic-perf, the benchmarks): CPU
// time and resident memory of a process, and bytes through network interfaces.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace sonic::bench {

/// User + system CPU seconds of this process.
inline double process_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

/// User + system CPU seconds of another process of this machine (0 when it is gone).
inline double process_cpu_seconds(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return 0;
  std::istringstream fields(line.substr(line.rfind(')') + 2));
  std::string skip;
  for (int i = 0; i < 11; ++i) fields >> skip;  // fields 3..13
  double utime = 0, stime = 0;
  fields >> utime >> stime;
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

/// Resident memory of this process in KiB (VmRSS), 0 when unknown.
inline long resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

/// Bytes an interface sent plus received, or every interface's for an empty name. A loopback
/// byte is counted once (it is sent and received by the same interface).
inline double interface_bytes(const std::string& only = {}) {
  std::ifstream dev("/proc/net/dev");
  std::string line;
  double total = 0;
  while (std::getline(dev, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    if (!only.empty() && name != only) continue;
    std::istringstream fields(line.substr(colon + 1));
    double rx = 0, skip = 0, tx = 0;
    fields >> rx;
    for (int i = 0; i < 7; ++i) fields >> skip;
    fields >> tx;
    total += name == "lo" ? tx : rx + tx;
  }
  return total;
}

}  // namespace sonic::bench

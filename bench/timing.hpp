// Timing helpers shared by the benchmark programs: medians over repeated runs, since a shared
// machine is noisy.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

namespace sonic::bench {

using Clock = std::chrono::steady_clock;

inline double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

inline double percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1,
                         static_cast<std::size_t>(p * static_cast<double>(values.size())))];
}

inline double median(std::vector<double> values) { return percentile(std::move(values), 0.5); }

}  // namespace sonic::bench

// sonic-perf — which loads are measured: every one of the sweep in turn, or, with
// --latency-threshold and --binary-search, a bisection for the highest that keeps the chosen
// latency percentile under the threshold (perf_analyzer's --binary-search, over any sweep).
#pragma once

#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>

#include "measure.hpp"
#include "options.hpp"

namespace sonic::perf {

// Whether a point meets --latency-threshold: every request answered, in time.
inline bool meets_threshold(const Point& p, const Options& o) {
  return p.failures == 0 && !p.unanswered && p.chosen_us <= o.latency_threshold_us;
}

// Measures the loads asked for: every one in turn (a sweep stops where nothing is answered, or
// where the latency threshold is first exceeded), or with --binary-search the highest meeting
// the threshold, by bisecting the list of loads. Returns the points by load.
inline std::vector<Point> sweep(const Options& o, const std::function<Point(int)>& measure) {
  const std::vector<int>& loads = o.rates.empty() ? o.concurrency : o.rates;
  std::vector<Point> points;
  if (!o.binary_search) {
    for (int load : loads) {
      points.push_back(measure(load));
      if (points.back().unanswered) {
        std::fprintf(stderr, "sonic-perf: stopping the sweep: no request is answered\n");
        break;
      }
      if (o.latency_threshold_us > 0 && !meets_threshold(points.back(), o)) {
        std::fprintf(stderr, "sonic-perf: stopping the sweep: over the latency threshold\n");
        break;
      }
    }
    return points;
  }
  // Bisection over the loads' indices: `good` meets the threshold, `bad` does not.
  points.push_back(measure(loads.front()));
  if (!meets_threshold(points.back(), o) || loads.size() == 1) return points;
  points.push_back(measure(loads.back()));
  if (meets_threshold(points.back(), o)) return points;
  std::size_t good = 0, bad = loads.size() - 1;
  while (bad - good > 1 && !points.back().unanswered) {
    std::size_t middle = good + (bad - good) / 2;
    points.push_back(measure(loads[middle]));
    (meets_threshold(points.back(), o) ? good : bad) = middle;
  }
  std::sort(points.begin(), points.end(), [](const Point& a, const Point& b) {
    return a.concurrency + a.rate < b.concurrency + b.rate;
  });
  return points;
}

// What --latency-threshold found; false when no load met it.
inline bool report_threshold(const Options& o, const std::vector<Point>& points) {
  const Point* best = nullptr;
  for (const auto& p : points) {
    if (meets_threshold(p, o)) best = &p;
  }
  const double threshold_ms = o.latency_threshold_us / 1000;
  if (!best) {
    std::fprintf(stderr, "sonic-perf: no load kept p%d under %.3f ms\n", o.percentile,
                 threshold_ms);
    return false;
  }
  std::fprintf(
      stderr,
      "sonic-perf: the highest load with p%d under %.3f ms: %s (%.1f infer/s, p%d %.3f ms)\n",
      o.percentile, threshold_ms, best->load.c_str(), best->throughput, o.percentile,
      best->chosen_us / 1000);
  return true;
}

}  // namespace sonic::perf

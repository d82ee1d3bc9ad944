// sonic-perf — the results: a table for the terminal, CSV and JSON for tools, and an SVG plot of
// throughput against latency.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "line_plot.hpp"
#include "measure.hpp"

namespace sonic::perf {

/// The table; a column of the --percentile latency is added when it is not one of the others.
inline void print_table(const std::vector<Point>& points, int chosen) {
  const bool extra = chosen != 50 && chosen != 90 && chosen != 95 && chosen != 99;
  const std::string chosen_title = "p" + std::to_string(chosen) + " us";
  std::printf("%-16s %10s %8s %9s %9s %9s %9s %9s", "load", "infer/s", "failed", "p50 us", "p90 us",
              "p95 us", "p99 us", "max us");
  if (extra) std::printf(" %9s", chosen_title.c_str());
  std::printf(" %9s %11s %10s %10s %6s\n", "cpu us", "wire B/req", "srv queue", "srv comp",
              "stable");
  for (const auto& p : points) {
    std::printf("%-16s %10.1f %8ld %9.0f %9.0f %9.0f %9.0f %9.0f", p.load.c_str(), p.throughput,
                p.failures, p.p50_us, p.p90_us, p.p95_us, p.p99_us, p.max_us);
    if (extra) std::printf(" %9.0f", p.chosen_us);
    std::printf(" %9.1f %11.0f %10.1f %10.1f %6s\n", p.client_cpu_us, p.wire_bytes,
                p.server_queue_us, p.server_compute_us, p.stable ? "yes" : "no");
  }
}

/// CSV: the columns of earlier versions keep their places; p95 and the chosen percentile follow.
inline void write_csv(const std::string& path, const std::vector<Point>& points, int chosen) {
  std::ofstream out(path);
  out << "load,concurrency,rate,requests,failures,seconds,throughput,p50_us,p90_us,p99_us,max_us,"
         "client_cpu_us,wire_bytes,server_queue_us,server_compute_us,stable,p95_us,"
         "percentile,percentile_us\n";
  for (const auto& p : points) {
    out << p.load << ',' << p.concurrency << ',' << p.rate << ',' << p.requests << ',' << p.failures
        << ',' << p.seconds << ',' << p.throughput << ',' << p.p50_us << ',' << p.p90_us << ','
        << p.p99_us << ',' << p.max_us << ',' << p.client_cpu_us << ',' << p.wire_bytes << ','
        << p.server_queue_us << ',' << p.server_compute_us << ',' << (p.stable ? "true" : "false")
        << ',' << p.p95_us << ',' << chosen << ',' << p.chosen_us << '\n';
  }
  if (!out) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
}

inline void write_json(const std::string& path, const std::string& url, const std::string& model,
                       const std::vector<Point>& points, int chosen) {
  std::ofstream out(path);
  auto quote = [](const std::string& s) {
    std::string q = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') q += '\\';
      q += c;
    }
    return q + '"';
  };
  out << "{\"url\":" << quote(url) << ",\"model\":" << quote(model) << ",\"points\":[";
  for (std::size_t i = 0; i < points.size(); ++i) {
    const Point& p = points[i];
    out << (i ? "," : "") << "{\"load\":" << quote(p.load) << ",\"concurrency\":" << p.concurrency
        << ",\"rate\":" << p.rate << ",\"requests\":" << p.requests
        << ",\"all_requests\":" << p.all_requests << ",\"failures\":" << p.failures
        << ",\"seconds\":" << p.seconds << ",\"throughput\":" << p.throughput
        << ",\"p50_us\":" << p.p50_us << ",\"p90_us\":" << p.p90_us << ",\"p95_us\":" << p.p95_us
        << ",\"p99_us\":" << p.p99_us << ",\"percentile\":" << chosen
        << ",\"percentile_us\":" << p.chosen_us << ",\"max_us\":" << p.max_us
        << ",\"client_cpu_us\":" << p.client_cpu_us << ",\"wire_bytes\":" << p.wire_bytes
        << ",\"server_queue_us\":" << p.server_queue_us
        << ",\"server_compute_us\":" << p.server_compute_us
        << ",\"stable\":" << (p.stable ? "true" : "false") << "}";
  }
  out << "]}\n";
  if (!out) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
}

/// Throughput (x) against p50 and p99 latency (y), one marker per point, labelled by its load.
inline void write_svg(const std::string& path, const std::string& title,
                      const std::vector<Point>& points) {
  bench::PlotSeries p99{"p99", "#c0392b", {}, {}}, p50{"p50", "#2c7fb8", {}, {}};
  for (const auto& p : points) {
    p99.points.emplace_back(p.throughput, p.p99_us / 1000);
    p99.labels.push_back(p.load);
    p50.points.emplace_back(p.throughput, p.p50_us / 1000);
  }
  if (!bench::write_line_plot(path, title, "throughput (inferences/s)", "latency (ms)",
                              {p99, p50})) {
    throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
  }
}

}  // namespace sonic::perf

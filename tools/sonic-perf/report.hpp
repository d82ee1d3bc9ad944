// sonic-perf — the results: a table for the terminal, CSV and JSON for tools, and an SVG plot of
// throughput against latency drawn here (no plotting dependency).
#pragma once

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "measure.hpp"

namespace sonic::perf {

inline void print_table(const std::vector<Point>& points) {
  std::printf("%-16s %10s %9s %9s %9s %9s %9s %11s %10s %10s %6s\n", "load", "infer/s", "p50 us",
              "p90 us", "p99 us", "max us", "cpu us", "wire B/req", "srv queue", "srv comp",
              "stable");
  for (const auto& p : points) {
    std::printf("%-16s %10.1f %9.0f %9.0f %9.0f %9.0f %9.1f %11.0f %10.1f %10.1f %6s\n",
                p.load.c_str(), p.throughput, p.p50_us, p.p90_us, p.p99_us, p.max_us,
                p.client_cpu_us, p.wire_bytes, p.server_queue_us, p.server_compute_us,
                p.stable ? "yes" : "no");
  }
}

inline void write_csv(const std::string& path, const std::vector<Point>& points) {
  std::ofstream out(path);
  out << "load,concurrency,rate,requests,failures,seconds,throughput,p50_us,p90_us,p99_us,max_us,"
         "client_cpu_us,wire_bytes,server_queue_us,server_compute_us,stable\n";
  for (const auto& p : points) {
    out << p.load << ',' << p.concurrency << ',' << p.rate << ',' << p.requests << ',' << p.failures
        << ',' << p.seconds << ',' << p.throughput << ',' << p.p50_us << ',' << p.p90_us << ','
        << p.p99_us << ',' << p.max_us << ',' << p.client_cpu_us << ',' << p.wire_bytes << ','
        << p.server_queue_us << ',' << p.server_compute_us << ',' << (p.stable ? "true" : "false")
        << '\n';
  }
  if (!out) throw Error(StatusCode::Unavailable, "cannot write " + path);
}

inline void write_json(const std::string& path, const std::string& url, const std::string& model,
                       const std::vector<Point>& points) {
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
        << ",\"p50_us\":" << p.p50_us << ",\"p90_us\":" << p.p90_us << ",\"p99_us\":" << p.p99_us
        << ",\"max_us\":" << p.max_us << ",\"client_cpu_us\":" << p.client_cpu_us
        << ",\"wire_bytes\":" << p.wire_bytes << ",\"server_queue_us\":" << p.server_queue_us
        << ",\"server_compute_us\":" << p.server_compute_us
        << ",\"stable\":" << (p.stable ? "true" : "false") << "}";
  }
  out << "]}\n";
  if (!out) throw Error(StatusCode::Unavailable, "cannot write " + path);
}

/// Throughput (x) against p50 and p99 latency (y), one marker per point, labelled by its load.
inline void write_svg(const std::string& path, const std::string& title,
                      const std::vector<Point>& points) {
  const double width = 720, height = 440, left = 70, right = 20, top = 40, bottom = 50;
  double max_x = 1, max_y = 1;
  for (const auto& p : points) {
    max_x = std::max(max_x, p.throughput);
    max_y = std::max(max_y, p.p99_us / 1000);
  }
  max_x *= 1.1;
  max_y *= 1.1;
  auto x = [&](double v) { return left + v / max_x * (width - left - right); };
  auto y = [&](double v) { return height - bottom - v / max_y * (height - top - bottom); };
  std::ofstream out(path);
  char buf[256];
  out << "<svg xmlns='http://www.w3.org/2000/svg' width='" << width << "' height='" << height
      << "' font-family='sans-serif' font-size='12'>\n<rect width='100%' height='100%' "
         "fill='white'/>\n";
  out << "<text x='" << left << "' y='22' font-size='14'>" << title << "</text>\n";
  // Axes with five ticks each.
  for (int i = 0; i <= 5; ++i) {
    double vx = max_x * i / 5, vy = max_y * i / 5;
    std::snprintf(buf, sizeof buf,
                  "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#ddd'/>"
                  "<text x='%.1f' y='%.1f' text-anchor='middle'>%.0f</text>\n",
                  x(vx), y(0), x(vx), y(max_y), x(vx), height - bottom + 18, vx);
    out << buf;
    std::snprintf(buf, sizeof buf,
                  "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#ddd'/>"
                  "<text x='%.1f' y='%.1f' text-anchor='end'>%.2f</text>\n",
                  x(0), y(vy), x(max_x), y(vy), left - 6, y(vy) + 4, vy);
    out << buf;
  }
  out << "<text x='" << (left + width - right) / 2 << "' y='" << height - 12
      << "' text-anchor='middle'>throughput (inferences/s)</text>\n";
  out << "<text transform='translate(16," << (top + height - bottom) / 2
      << ") rotate(-90)' text-anchor='middle'>latency (ms)</text>\n";
  auto series = [&](double Point::*field, const char* color, const char* name, double offset) {
    std::string path_data;
    for (const auto& p : points) {
      std::snprintf(buf, sizeof buf, "%s%.1f,%.1f", path_data.empty() ? "M" : " L", x(p.throughput),
                    y(p.*field / 1000));
      path_data += buf;
    }
    out << "<path d='" << path_data << "' fill='none' stroke='" << color
        << "' stroke-width='2'/>\n";
    for (const auto& p : points) {
      std::snprintf(buf, sizeof buf, "<circle cx='%.1f' cy='%.1f' r='3.5' fill='%s'/>\n",
                    x(p.throughput), y(p.*field / 1000), color);
      out << buf;
    }
    out << "<text x='" << width - right - 60 << "' y='" << top + offset << "' fill='" << color
        << "'>" << name << "</text>\n";
  };
  series(&Point::p99_us, "#c0392b", "p99", 0);
  series(&Point::p50_us, "#2c7fb8", "p50", 16);
  for (const auto& p : points) {
    std::snprintf(buf, sizeof buf, "<text x='%.1f' y='%.1f' font-size='10' fill='#555'>%s</text>\n",
                  x(p.throughput) + 5, y(p.p99_us / 1000) - 6, p.load.c_str());
    out << buf;
  }
  out << "</svg>\n";
  if (!out) throw Error(StatusCode::Unavailable, "cannot write " + path);
}

}  // namespace sonic::perf

// A line plot drawn as SVG by the measuring programs themselves (no plotting dependency):
// series of (x, y) points on shared axes from zero, five grid lines each way, points labelled.
#pragma once

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace sonic::bench {

/// One line of a plot. `labels`, when given, has one entry per point.
struct PlotSeries {
  std::string name;
  std::string color;  ///< an SVG colour: "#c0392b"
  std::vector<std::pair<double, double>> points;
  std::vector<std::string> labels;
};

/// Writes the plot to `path`; false when the file cannot be written.
inline bool write_line_plot(const std::string& path, const std::string& title,
                            const std::string& x_label, const std::string& y_label,
                            const std::vector<PlotSeries>& series) {
  const double width = 720, height = 440, left = 70, right = 20, top = 40, bottom = 50;
  double max_x = 0, max_y = 0;
  for (const auto& line : series) {
    for (const auto& [px, py] : line.points) {
      max_x = std::max(max_x, px);
      max_y = std::max(max_y, py);
    }
  }
  max_x = max_x > 0 ? max_x * 1.1 : 1;
  max_y = max_y > 0 ? max_y * 1.1 : 1;
  auto x = [&](double v) { return left + v / max_x * (width - left - right); };
  auto y = [&](double v) { return height - bottom - v / max_y * (height - top - bottom); };
  std::ofstream out(path);
  char buf[320];
  out << "<svg xmlns='http://www.w3.org/2000/svg' width='" << width << "' height='" << height
      << "' font-family='sans-serif' font-size='12'>\n<rect width='100%' height='100%' "
         "fill='white'/>\n";
  out << "<text x='" << left << "' y='22' font-size='14'>" << title << "</text>\n";
  for (int i = 0; i <= 5; ++i) {
    const double vx = max_x * i / 5, vy = max_y * i / 5;
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
      << "' text-anchor='middle'>" << x_label << "</text>\n";
  out << "<text transform='translate(16," << (top + height - bottom) / 2
      << ") rotate(-90)' text-anchor='middle'>" << y_label << "</text>\n";
  double legend_y = top;
  for (const auto& line : series) {
    std::string path_data;
    for (const auto& [px, py] : line.points) {
      std::snprintf(buf, sizeof buf, "%s%.1f,%.1f", path_data.empty() ? "M" : " L", x(px), y(py));
      path_data += buf;
    }
    out << "<path d='" << path_data << "' fill='none' stroke='" << line.color
        << "' stroke-width='2'/>\n";
    for (std::size_t i = 0; i < line.points.size(); ++i) {
      const auto [px, py] = line.points[i];
      std::snprintf(buf, sizeof buf, "<circle cx='%.1f' cy='%.1f' r='3.5' fill='%s'/>\n", x(px),
                    y(py), line.color.c_str());
      out << buf;
      if (i < line.labels.size()) {
        std::snprintf(buf, sizeof buf,
                      "<text x='%.1f' y='%.1f' font-size='10' fill='#555'>%s</text>\n", x(px) + 5,
                      y(py) - 6, line.labels[i].c_str());
        out << buf;
      }
    }
    out << "<text x='" << width - right - 140 << "' y='" << legend_y << "' fill='" << line.color
        << "'>" << line.name << "</text>\n";
    legend_y += 16;
  }
  out << "</svg>\n";
  return static_cast<bool>(out);
}

}  // namespace sonic::bench

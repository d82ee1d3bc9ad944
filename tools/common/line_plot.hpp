// A line plot drawn as SVG by the measuring programs themselves (no plotting dependency):
// series of (x, y) points on shared axes that include zero, ticks and grid lines at round
// values, the legend beside the plot area (never over the data), points optionally labelled.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
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

/// One axis of a plot: its range runs from the first tick to the last, `step` apart.
struct PlotAxis {
  double lo = 0, hi = 1, step = 0.2;
  std::vector<double> ticks;        ///< lo, lo + step, ..., hi
  std::vector<std::string> labels;  ///< one per tick, all with the same decimals and unit suffix
};

namespace detail {

/// Where the pieces of a plot go, in SVG pixels. Text widths are estimates (no font metrics):
/// an average sans-serif advance a little wider than the real one, so that text fits.
struct PlotLayout {
  static constexpr double plot_width = 600, plot_height = 340;  // the plot area, inside the axes
  static constexpr double font = 12, title_font = 14, point_label_font = 10;
  static constexpr double char_width = 0.62;  // ems per character
  static constexpr double top = 40;           // the title above the plot area
  static constexpr double bottom = 50;        // x tick labels and the x axis label below it
  static constexpr double y_label_column = 28;
  static constexpr double legend_gap = 16, legend_padding = 8, legend_row = 18, swatch = 22;
  static constexpr double margin = 16;  // outside the legend and the title
};

/// 10^n, exact for |n| <= 22.
inline double power_of_ten(int n) {
  double p = 1;
  for (int i = 0; i < (n < 0 ? -n : n); ++i) p *= 10;
  return n < 0 ? 1 / p : p;
}

/// `value` with `decimals` digits after the point.
inline std::string fixed(double value, int decimals) {
  const int size = std::snprintf(nullptr, 0, "%.*f", decimals, value);
  std::string text(static_cast<std::size_t>(size > 0 ? size : 0) + 1, '\0');
  std::snprintf(text.data(), text.size(), "%.*f", decimals, value);
  text.pop_back();
  return text;
}

/// An SVG coordinate: one decimal.
inline std::string coord(double value) { return fixed(value, 1); }

/// `text` with the characters XML gives a meaning escaped, for text and attribute values.
inline std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '\'': out += "&apos;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

/// Estimated width of `text` (UTF-8) at `font_size` pixels.
inline double text_width(const std::string& text, double font_size) {
  std::size_t characters = 0;
  for (const char c : text) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++characters;
  }
  return static_cast<double>(characters) * font_size * PlotLayout::char_width;
}

}  // namespace detail

/// Round ticks covering [lo, hi]: a step of 1, 2, 2.5 or 5 times a power of ten, the smallest
/// that gives at most `max_ticks` ticks (which makes 5 to 8 for the default of 8), and the range
/// widened to the ticks on either side. Labels have the decimals the step needs, the same on every
/// label ("0" excepted), and an axis whose ticks reach 10000 counts in k, M or G. An empty range is
/// widened first: [0, 1] for zero, 10% either side otherwise.
inline PlotAxis nice_axis(double lo, double hi, int max_ticks = 8) {
  PlotAxis axis;
  if (!std::isfinite(lo) || !std::isfinite(hi)) lo = hi = 0;
  if (lo > hi) std::swap(lo, hi);
  max_ticks = std::max(max_ticks, 3);
  double magnitude = std::max(std::fabs(lo), std::fabs(hi));
  if (magnitude < 1e-200) lo = hi = magnitude = 0;  // too small for powers of ten: zero
  if (magnitude > 1e300) {  // too large for powers of ten: the range as it is
    axis.lo = lo;
    axis.hi = hi;
    axis.step = hi - lo;
    axis.ticks = {lo, hi};
    for (const double value : axis.ticks) {
      char text[32];
      std::snprintf(text, sizeof text, "%.3g", value);
      axis.labels.emplace_back(text);
    }
    return axis;
  }
  if (hi - lo <= magnitude * 1e-9) {  // one value (or values equal but for rounding)
    const double middle = lo / 2 + hi / 2;
    lo = middle == 0 ? 0 : middle - std::fabs(middle) / 10;
    hi = middle == 0 ? 1 : middle + std::fabs(middle) / 10;
  }
  const double span = hi - lo;
  // step = mantissa × 10^exponent, mantissa in {10, 20, 25, 50}; the first try has far too many
  // ticks, so the one chosen is the smallest that fits.
  int exponent = static_cast<int>(std::floor(std::log10(span / max_ticks))) - 2;
  int mantissa = 10;
  double first = 0, last = 0;
  for (int tries = 0; tries < 64; ++tries) {
    bool found = false;
    for (const int m : {10, 20, 25, 50}) {
      const double step = m * detail::power_of_ten(exponent);
      // A tolerance of a billionth of a step: 0.30000000000000004 is the tick 0.3.
      first = std::floor(lo / step + 1e-9);
      last = std::ceil(hi / step - 1e-9);
      if (last - first + 1 <= max_ticks) {
        mantissa = m;
        found = true;
        break;
      }
    }
    if (found) break;
    ++exponent;
  }
  // Each tick is a whole number times an exact power of ten: the double nearest the round value.
  auto tick = [&](double i) {
    const double units = i * mantissa;
    return exponent >= 0 ? units * detail::power_of_ten(exponent)
                         : units / detail::power_of_ten(-exponent);
  };
  axis.step = tick(1);
  axis.lo = tick(first);
  axis.hi = tick(last);
  for (double i = first; i <= last; ++i) axis.ticks.push_back(tick(i));

  // Every tick is a multiple of 10^place: 20 × 10^-2 = 0.2 needs one decimal, 25 × 10^-2 two.
  // Axes reaching 10000 count in thousands (k), millions (M) or billions (G), with the decimals
  // the step needs in that unit: 0.5M, 1.0M, 1.5M.
  const int place = mantissa % 10 == 0 ? exponent + 1 : exponent;
  const double largest = std::max(std::fabs(axis.lo), std::fabs(axis.hi));
  int thousands = 0;
  if (largest >= 1e4)
    thousands = std::min(3, static_cast<int>(std::floor(std::log10(largest))) / 3);
  static const char* const suffixes[] = {"", "k", "M", "G"};
  const int decimals = std::max(0, 3 * thousands - place);
  for (const double value : axis.ticks) {
    if (value == 0) {
      axis.labels.emplace_back("0");
    } else {
      axis.labels.push_back(detail::fixed(value / detail::power_of_ten(3 * thousands), decimals) +
                            suffixes[thousands]);
    }
  }
  return axis;
}

/// The plot as an SVG document. Both axes include zero and every finite point (non-finite
/// coordinates are left out, and break their line); the legend lists the series to the right of
/// the plot area, and the picture is as wide as it needs to be for it.
inline std::string line_plot_svg(const std::string& title, const std::string& x_label,
                                 const std::string& y_label,
                                 const std::vector<PlotSeries>& series) {
  using detail::coord;
  using detail::text_width;
  using detail::xml_escape;
  using L = detail::PlotLayout;
  auto finite = [](const std::pair<double, double>& p) {
    return std::isfinite(p.first) && std::isfinite(p.second);
  };
  double min_x = 0, max_x = 0, min_y = 0, max_y = 0;
  for (const auto& line : series) {
    for (const auto& p : line.points) {
      if (!finite(p)) continue;
      min_x = std::min(min_x, p.first);
      max_x = std::max(max_x, p.first);
      min_y = std::min(min_y, p.second);
      max_y = std::max(max_y, p.second);
    }
  }
  const PlotAxis ax = nice_axis(min_x, max_x), ay = nice_axis(min_y, max_y);

  // The plot area: left of it the y axis label and the y tick labels; right of it the overhang
  // of the last x tick label, then the legend.
  double y_ticks_width = 0;
  for (const auto& label : ay.labels)
    y_ticks_width = std::max(y_ticks_width, text_width(label, L::font));
  const double left = L::y_label_column + y_ticks_width + 8;
  const double right = left + L::plot_width, top = L::top, bottom = top + L::plot_height;
  const double x_overhang = text_width(ax.labels.back(), L::font) / 2;
  double name_width = 0;
  for (const auto& line : series) name_width = std::max(name_width, text_width(line.name, L::font));
  const double legend_x = right + std::max(L::legend_gap, x_overhang + 8), legend_y = top;
  const double legend_width = 2 * L::legend_padding + L::swatch + 6 + name_width;
  const double legend_height =
      2 * L::legend_padding + L::legend_row * static_cast<double>(series.size()) - 4;
  double width = series.empty() ? right + std::max(L::margin, x_overhang + 8)
                                : legend_x + legend_width + L::margin;
  width = std::max(width, left + text_width(title, L::title_font) + L::margin);
  double height = bottom + L::bottom;
  if (!series.empty()) height = std::max(height, legend_y + legend_height + L::margin);

  auto px = [&](double v) { return left + (v - ax.lo) / (ax.hi - ax.lo) * L::plot_width; };
  auto py = [&](double v) { return bottom - (v - ay.lo) / (ay.hi - ay.lo) * L::plot_height; };

  std::string svg = "<svg xmlns='http://www.w3.org/2000/svg' width='" + coord(width) +
                    "' height='" + coord(height) + "' viewBox='0 0 " + coord(width) + ' ' +
                    coord(height) + "' font-family='sans-serif' font-size='12'>\n";
  svg += "<rect width='100%' height='100%' fill='white'/>\n";
  svg += "<text class='title' x='" + coord(left) + "' y='24' font-size='14'>" + xml_escape(title) +
         "</text>\n";
  for (std::size_t i = 0; i < ax.ticks.size(); ++i) {
    const std::string x = coord(px(ax.ticks[i]));
    svg += "<line class='grid' x1='" + x + "' y1='" + coord(top) + "' x2='" + x + "' y2='" +
           coord(bottom) + "' stroke='#ddd'/><text class='tick-x' x='" + x + "' y='" +
           coord(bottom + 18) + "' text-anchor='middle'>" + ax.labels[i] + "</text>\n";
  }
  for (std::size_t i = 0; i < ay.ticks.size(); ++i) {
    const double y = py(ay.ticks[i]);
    svg += "<line class='grid' x1='" + coord(left) + "' y1='" + coord(y) + "' x2='" + coord(right) +
           "' y2='" + coord(y) + "' stroke='#ddd'/><text class='tick-y' x='" + coord(left - 6) +
           "' y='" + coord(y + 4) + "' text-anchor='end'>" + ay.labels[i] + "</text>\n";
  }
  svg += "<rect class='plot-area' x='" + coord(left) + "' y='" + coord(top) + "' width='" +
         coord(L::plot_width) + "' height='" + coord(L::plot_height) +
         "' fill='none' stroke='#999'/>\n";
  svg += "<text class='axis-label' x='" + coord((left + right) / 2) + "' y='" + coord(bottom + 40) +
         "' text-anchor='middle'>" + xml_escape(x_label) + "</text>\n";
  svg += "<text class='axis-label' transform='translate(16," + coord((top + bottom) / 2) +
         ") rotate(-90)' text-anchor='middle'>" + xml_escape(y_label) + "</text>\n";

  for (const auto& line : series) {
    const std::string color = xml_escape(line.color);
    std::string path;
    bool pen_down = false;
    for (const auto& p : line.points) {
      if (!finite(p)) {
        pen_down = false;
        continue;
      }
      path += (path.empty() ? "" : " ") + std::string(pen_down ? "L" : "M") + coord(px(p.first)) +
              ',' + coord(py(p.second));
      pen_down = true;
    }
    if (!path.empty()) {
      svg += "<path class='series' d='" + path + "' fill='none' stroke='" + color +
             "' stroke-width='2'/>\n";
    }
    for (std::size_t i = 0; i < line.points.size(); ++i) {
      if (!finite(line.points[i])) continue;
      const double x = px(line.points[i].first), y = py(line.points[i].second);
      svg += "<circle class='point' cx='" + coord(x) + "' cy='" + coord(y) + "' r='3.5' fill='" +
             color + "'/>\n";
      if (i >= line.labels.size() || line.labels[i].empty()) continue;
      // Above and to the right of the point, or to its left and below it where the label would
      // leave the plot area (and run into the legend or the title).
      const double label_width = text_width(line.labels[i], L::point_label_font);
      const bool to_left = x + 5 + label_width > right;
      const bool below = y - 6 - L::point_label_font < top;
      svg += "<text class='point-label' x='" + coord(to_left ? x - 5 : x + 5) + "' y='" +
             coord(below ? y + 14 : y - 6) + "' font-size='10' fill='#555'" +
             (to_left ? " text-anchor='end'" : "") + '>' + xml_escape(line.labels[i]) + "</text>\n";
    }
  }

  if (!series.empty()) {
    svg += "<g class='legend'>\n<rect class='legend-box' x='" + coord(legend_x) + "' y='" +
           coord(legend_y) + "' width='" + coord(legend_width) + "' height='" +
           coord(legend_height) + "' fill='white' stroke='#bbb'/>\n";
    double row = legend_y + L::legend_padding + L::font * 0.75;
    for (const auto& line : series) {
      const std::string color = xml_escape(line.color);
      const double x0 = legend_x + L::legend_padding, mid = row - 4;
      svg += "<line x1='" + coord(x0) + "' y1='" + coord(mid) + "' x2='" + coord(x0 + L::swatch) +
             "' y2='" + coord(mid) + "' stroke='" + color + "' stroke-width='2'/><circle cx='" +
             coord(x0 + L::swatch / 2) + "' cy='" + coord(mid) + "' r='3.5' fill='" + color +
             "'/><text x='" + coord(x0 + L::swatch + 6) + "' y='" + coord(row) + "'>" +
             xml_escape(line.name) + "</text>\n";
      row += L::legend_row;
    }
    svg += "</g>\n";
  }
  svg += "</svg>\n";
  return svg;
}

/// Writes the plot (line_plot_svg) to `path`; false when the file cannot be written.
inline bool write_line_plot(const std::string& path, const std::string& title,
                            const std::string& x_label, const std::string& y_label,
                            const std::vector<PlotSeries>& series) {
  std::ofstream out(path);
  out << line_plot_svg(title, x_label, y_label, series);
  out.close();
  return !out.fail();
}

}  // namespace sonic::bench

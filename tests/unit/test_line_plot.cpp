// Tests of the SVG line plot of the measuring programs (tools/common/line_plot.hpp): round ticks,
// the legend outside the data, and a document that parses back.
#include "line_plot.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

using sonic::bench::line_plot_svg;
using sonic::bench::nice_axis;
using sonic::bench::PlotAxis;
using sonic::bench::PlotSeries;

namespace {

// ---- A small reader of the SVG written: elements, their attributes and text, checked for
// ---- matching tags, quoted attributes and escaped text on the way.

struct Element {
  std::string name;
  std::map<std::string, std::string> attributes;
  std::string text;  // unescaped; of a <text> element
  double number(const std::string& attribute) const {
    const auto found = attributes.find(attribute);
    REQUIRE_MESSAGE(found != attributes.end(), name << " has no " << attribute);
    char* end = nullptr;
    const double value = std::strtod(found->second.c_str(), &end);
    REQUIRE_MESSAGE(*end == '\0', attribute << "='" << found->second << "' is not a number");
    return value;
  }
  std::string get(const std::string& attribute) const {
    const auto found = attributes.find(attribute);
    return found == attributes.end() ? std::string() : found->second;
  }
};

std::string unescape(const std::string& text) {
  static const std::pair<const char*, char> entities[] = {
      {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&apos;", '\''}, {"&quot;", '"'}};
  REQUIRE_MESSAGE(text.find('<') == std::string::npos, "a raw < in " << text);
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] != '&') {
      out += text[i++];
      continue;
    }
    bool known = false;
    for (const auto& [entity, c] : entities) {
      if (text.compare(i, std::char_traits<char>::length(entity), entity) == 0) {
        out += c;
        i += std::char_traits<char>::length(entity);
        known = true;
        break;
      }
    }
    REQUIRE_MESSAGE(known, "a raw & in " << text);
  }
  return out;
}

/// Every element of `svg`, in document order; fails the test where the document is malformed.
std::vector<Element> parse_svg(const std::string& svg) {
  std::vector<Element> elements;
  std::vector<std::size_t> open;  // indices into elements
  std::size_t i = 0;
  while (i < svg.size()) {
    const std::size_t lt = svg.find('<', i);
    const std::string between = svg.substr(i, lt == std::string::npos ? std::string::npos : lt - i);
    if (!open.empty()) {
      elements[open.back()].text += unescape(between);
    } else {
      REQUIRE_MESSAGE(between.find_first_not_of(" \n") == std::string::npos,
                      "text outside the root: " << between);
    }
    if (lt == std::string::npos) break;
    const std::size_t gt = svg.find('>', lt);
    REQUIRE(gt != std::string::npos);
    std::string tag = svg.substr(lt + 1, gt - lt - 1);
    i = gt + 1;
    if (!tag.empty() && tag[0] == '/') {
      REQUIRE_MESSAGE(!open.empty(), "</" << tag << " closes nothing");
      CHECK(tag.substr(1) == elements[open.back()].name);
      open.pop_back();
      continue;
    }
    const bool empty = !tag.empty() && tag.back() == '/';
    if (empty) tag.pop_back();
    Element element;
    std::size_t k = tag.find_first_of(" \n");
    element.name = tag.substr(0, k);
    REQUIRE(!element.name.empty());
    while (k != std::string::npos && k < tag.size()) {
      k = tag.find_first_not_of(" \n", k);
      if (k == std::string::npos) break;
      const std::size_t eq = tag.find('=', k);
      REQUIRE_MESSAGE(eq != std::string::npos, "attribute without value in <" << tag << '>');
      const std::string attribute = tag.substr(k, eq - k);
      REQUIRE_MESSAGE(eq + 1 < tag.size(), "no value in <" << tag << '>');
      const char quote = tag[eq + 1];
      REQUIRE_MESSAGE((quote == '\'' || quote == '"'), "unquoted value in <" << tag << '>');
      const std::size_t close = tag.find(quote, eq + 2);
      REQUIRE(close != std::string::npos);
      CHECK_MESSAGE(element.attributes.count(attribute) == 0, "repeated " << attribute);
      element.attributes[attribute] = unescape(tag.substr(eq + 2, close - eq - 2));
      k = close + 1;
    }
    REQUIRE_MESSAGE((!open.empty() || elements.empty()), "a second root element");
    elements.push_back(std::move(element));
    if (!empty) open.push_back(elements.size() - 1);
  }
  CHECK(open.empty());
  REQUIRE(!elements.empty());
  CHECK(elements.front().name == "svg");
  return elements;
}

std::vector<Element> with_class(const std::vector<Element>& elements, const std::string& name) {
  std::vector<Element> found;
  for (const auto& e : elements) {
    if (e.get("class") == name) found.push_back(e);
  }
  return found;
}

/// A tick label read back as a number: "0.25", "-3", "20k", "1.5M".
double label_value(const std::string& label) {
  char* end = nullptr;
  double value = std::strtod(label.c_str(), &end);
  const std::string suffix = end;
  if (suffix == "k") value *= 1e3;
  if (suffix == "M") value *= 1e6;
  if (suffix == "G") value *= 1e9;
  REQUIRE_MESSAGE((suffix.empty() || suffix == "k" || suffix == "M" || suffix == "G"),
                  "label " << label);
  return value;
}

/// The step is 1, 2, 2.5 or 5 times a power of ten, every tick a whole number of steps.
void check_round(const PlotAxis& axis) {
  INFO("axis ", axis.lo, " to ", axis.hi, " step ", axis.step);
  REQUIRE(axis.step > 0);
  const double exponent = std::floor(std::log10(axis.step) + 1e-12);
  const double mantissa = axis.step / std::pow(10.0, exponent);
  bool nice = false;
  for (const double m : {1.0, 2.0, 2.5, 5.0}) nice = nice || std::fabs(mantissa - m) < 1e-9;
  CHECK_MESSAGE(nice, "step " << axis.step << " is " << mantissa << " x 10^" << exponent);
  CHECK(axis.ticks.size() >= 4);
  CHECK(axis.ticks.size() <= 8);
  REQUIRE(axis.labels.size() == axis.ticks.size());
  CHECK(axis.ticks.front() == axis.lo);
  CHECK(axis.ticks.back() == axis.hi);
  for (std::size_t i = 0; i < axis.ticks.size(); ++i) {
    const double steps = axis.ticks[i] / axis.step;
    CHECK_MESSAGE(std::fabs(steps - std::round(steps)) < 1e-9, "tick " << axis.ticks[i]);
    if (i > 0) CHECK(axis.ticks[i] - axis.ticks[i - 1] == doctest::Approx(axis.step));
    // Labels that read back as the tick, with no more decimals than the step has (one more for
    // 2.5 × 10^k) in the label's unit: no 0.30000000000000004.
    const std::string& label = axis.labels[i];
    const std::size_t point = label.find('.');
    const double unit = label.back() == 'k'   ? 1e3
                        : label.back() == 'M' ? 1e6
                        : label.back() == 'G' ? 1e9
                                              : 1;
    const double step_decimals = std::max(0.0, -std::floor(std::log10(axis.step / unit) + 1e-12));
    const std::size_t digits =
        point == std::string::npos ? 0 : label.find_first_not_of("0123456789", point + 1);
    const std::size_t decimals =
        point == std::string::npos
            ? 0
            : (digits == std::string::npos ? label.size() : digits) - point - 1;
    CHECK_MESSAGE(static_cast<double>(decimals) <= step_decimals + 1, "label " << label);
    CHECK(label_value(axis.labels[i]) == doctest::Approx(axis.ticks[i]).epsilon(1e-12));
  }
}

void check_covers(const PlotAxis& axis, double lo, double hi) {
  CHECK(axis.lo <= lo);
  CHECK(axis.hi >= hi);
}

struct Box {
  double x0, y0, x1, y1;
};

Box box_of(const Element& rect) {
  return {rect.number("x"), rect.number("y"), rect.number("x") + rect.number("width"),
          rect.number("y") + rect.number("height")};
}

bool intersects(const Box& a, const Box& b) {
  return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;
}

/// The points of a path's d attribute ("M1,2 L3,4 ...").
std::vector<std::pair<double, double>> path_points(const std::string& d) {
  std::vector<std::pair<double, double>> points;
  std::istringstream in(d);
  std::string step;
  while (in >> step) {
    REQUIRE((step[0] == 'M' || step[0] == 'L'));
    const std::size_t comma = step.find(',');
    REQUIRE(comma != std::string::npos);
    points.emplace_back(std::stod(step.substr(1, comma - 1)), std::stod(step.substr(comma + 1)));
  }
  return points;
}

/// A plot with the two series sonic-perf draws, over an awkward range.
std::vector<PlotSeries> latency_curves() {
  PlotSeries p99{"p99", "#c0392b", {}, {}}, p50{"p50", "#2c7fb8", {}, {}};
  const double throughput[] = {1234, 5310, 20877, 51000, 77310, 98765};
  const double p99_ms[] = {0.41, 0.44, 0.52, 0.93, 1.9, 3.7};
  for (std::size_t i = 0; i < std::size(throughput); ++i) {
    p99.points.emplace_back(throughput[i], p99_ms[i]);
    p99.labels.push_back("c=" + std::to_string(1 << i));
    p50.points.emplace_back(throughput[i], p99_ms[i] / 2);
  }
  return {p99, p50};
}

}  // namespace

TEST_CASE("ticks are round, 4 to 8 of them, and cover the range") {
  const std::pair<double, double> ranges[] = {
      {0, 0.37}, {3, 97},  {1234, 98765}, {0, 98765},  {0, 1},  {0, 7},   {-13, 41},
      {0, 1e-5}, {0, 3e9}, {0.1, 0.3},    {1, 1.0001}, {0, 12}, {-5, -1}, {999, 1001}};
  for (const auto& range : ranges) {
    const double lo = range.first, hi = range.second;
    INFO("range ", lo, " to ", hi);
    const PlotAxis axis = nice_axis(lo, hi);
    check_round(axis);
    check_covers(axis, lo, hi);
    // No more than a step of slack at either end.
    CHECK(axis.lo > lo - axis.step);
    CHECK(axis.hi < hi + axis.step);
  }
}

TEST_CASE("ticks of awkward ranges, exactly") {
  auto labels = [](double lo, double hi) { return nice_axis(lo, hi).labels; };
  using Labels = std::vector<std::string>;
  CHECK(labels(0, 0.37) == Labels{"0", "0.1", "0.2", "0.3", "0.4"});
  CHECK(labels(3, 97) == Labels{"0", "20", "40", "60", "80", "100"});
  CHECK(labels(1234, 98765) == Labels{"0", "20k", "40k", "60k", "80k", "100k"});
  CHECK(labels(0, 10) == Labels{"0", "2", "4", "6", "8", "10"});
  CHECK(labels(0, 0.09) == Labels{"0", "0.02", "0.04", "0.06", "0.08", "0.10"});
  CHECK(labels(0, 22) == Labels{"0", "5", "10", "15", "20", "25"});
  CHECK(labels(0, 4500) == Labels{"0", "1000", "2000", "3000", "4000", "5000"});
  CHECK(labels(0, 2.2e6) == Labels{"0", "0.5M", "1.0M", "1.5M", "2.0M", "2.5M"});
  // The tick 0.3 is the double 0.3, not 0.30000000000000004.
  CHECK(nice_axis(0, 0.37).ticks[3] == 0.3);
  // 2.5 × 10^k steps take the decimal they need, on every label alike.
  CHECK(labels(0, 7) == Labels{"0", "1", "2", "3", "4", "5", "6", "7"});
  CHECK(labels(0, 17) == Labels{"0", "2.5", "5.0", "7.5", "10.0", "12.5", "15.0", "17.5"});
  CHECK(labels(0, 0.17) ==
        Labels{"0", "0.025", "0.050", "0.075", "0.100", "0.125", "0.150", "0.175"});
  CHECK(labels(-13, 41) == Labels{"-20", "-10", "0", "10", "20", "30", "40", "50"});
}

TEST_CASE("ticks of one value, of zero, and of no number") {
  SUBCASE("all zero") {
    const PlotAxis axis = nice_axis(0, 0);
    check_round(axis);
    CHECK(axis.lo == 0);
    CHECK(axis.hi == 1);
  }
  SUBCASE("a single value") {
    const PlotAxis axis = nice_axis(42, 42);
    check_round(axis);
    CHECK(axis.lo < 42);
    CHECK(axis.hi > 42);
  }
  SUBCASE("a single negative value") {
    const PlotAxis axis = nice_axis(-0.003, -0.003);
    check_round(axis);
    CHECK(axis.lo < -0.003);
    CHECK(axis.hi > -0.003);
  }
  SUBCASE("reversed bounds") {
    const PlotAxis axis = nice_axis(97, 3);
    check_round(axis);
    check_covers(axis, 3, 97);
  }
  SUBCASE("not a number") {
    const PlotAxis axis = nice_axis(std::numeric_limits<double>::quiet_NaN(), 5);
    check_round(axis);
  }
}

TEST_CASE("the SVG parses back: the plot area, points, lines and tick labels where they belong") {
  const auto series = latency_curves();
  const auto elements = parse_svg(
      line_plot_svg("m at grpc://h:1", "throughput (inferences/s)", "latency (ms)", series));
  const Element& svg = elements.front();
  const double width = svg.number("width"), height = svg.number("height");
  const auto areas = with_class(elements, "plot-area");
  REQUIRE(areas.size() == 1);
  const Box area = box_of(areas[0]);
  CHECK(area.x0 > 0);
  CHECK(area.x1 < width);
  CHECK(area.y1 < height);

  // Every marker and every vertex of the lines inside the plot area, one marker per point.
  const auto circles = with_class(elements, "point");
  CHECK(circles.size() == 12);
  for (const auto& c : circles) {
    CHECK(c.number("cx") >= area.x0);
    CHECK(c.number("cx") <= area.x1);
    CHECK(c.number("cy") >= area.y0);
    CHECK(c.number("cy") <= area.y1);
  }
  const auto paths = with_class(elements, "series");
  REQUIRE(paths.size() == 2);
  for (const auto& p : paths) {
    const auto points = path_points(p.get("d"));
    CHECK(points.size() == 6);
    for (const auto& [x, y] : points) {
      CHECK(x >= area.x0);
      CHECK(x <= area.x1);
      CHECK(y >= area.y0);
      CHECK(y <= area.y1);
    }
  }

  // Tick labels: round values, evenly spaced, the first and last on the plot area's edges, so a
  // point's position reads back as its value.
  const auto x_ticks = with_class(elements, "tick-x");
  const auto y_ticks = with_class(elements, "tick-y");
  REQUIRE(x_ticks.size() >= 4);
  REQUIRE(y_ticks.size() >= 4);
  CHECK(x_ticks.size() <= 8);
  CHECK(y_ticks.size() <= 8);
  CHECK(x_ticks.front().number("x") == doctest::Approx(area.x0).epsilon(1e-3));
  CHECK(x_ticks.back().number("x") == doctest::Approx(area.x1).epsilon(1e-3));
  const double x_lo = label_value(x_ticks.front().text), x_hi = label_value(x_ticks.back().text);
  const double x_step = label_value(x_ticks[1].text) - x_lo;
  CHECK(x_lo == 0);
  CHECK(x_hi == 100000);
  CHECK(x_step == 20000);
  for (std::size_t i = 0; i < x_ticks.size(); ++i) {
    CHECK(label_value(x_ticks[i].text) == doctest::Approx(x_lo + x_step * static_cast<double>(i)));
  }
  const double y_lo = label_value(y_ticks.front().text), y_hi = label_value(y_ticks.back().text);
  CHECK(y_lo == 0);
  CHECK(y_hi == 4);
  // The first point of p99 (1234, 0.41) is where the axes say.
  const Element& first = circles.front();
  CHECK(first.number("cx") ==
        doctest::Approx(area.x0 + 1234 / x_hi * (area.x1 - area.x0)).epsilon(1e-3));
  CHECK(first.number("cy") ==
        doctest::Approx(area.y1 - 0.41 / y_hi * (area.y1 - area.y0)).epsilon(1e-3));
}

TEST_CASE("the legend lies outside the plot area, inside the picture, clear of every label") {
  for (const auto& series : {latency_curves(),
                             std::vector<PlotSeries>{{"a rather long name for a series of points",
                                                      "#000",
                                                      {{0, 0}, {1, 1}},
                                                      {"top right corner", "x"}}},
                             std::vector<PlotSeries>{{"one", "red", {{5, 5}}, {}},
                                                     {"two", "blue", {{5, 5}}, {}},
                                                     {"three", "green", {{5, 5}}, {}},
                                                     {"four", "black", {{5, 5}}, {}}}}) {
    const auto elements = parse_svg(line_plot_svg("t", "x", "y", series));
    const Element& svg = elements.front();
    const Box area = box_of(with_class(elements, "plot-area").at(0));
    const auto boxes = with_class(elements, "legend-box");
    REQUIRE(boxes.size() == 1);
    const Box legend = box_of(boxes[0]);
    CHECK_FALSE(intersects(legend, area));
    CHECK(legend.x0 >= area.x1);  // to the right
    CHECK(legend.x1 <= svg.number("width"));
    CHECK(legend.y1 <= svg.number("height"));
    // Tall enough for a row per series.
    CHECK(legend.y1 - legend.y0 >= 14.0 * static_cast<double>(series.size()));
    // Text: the last x tick label, centred on the area's right edge, and the point labels.
    for (const auto& e : elements) {
      if (e.name != "text" || e.get("class").empty() || e.get("class") == "axis-label") continue;
      const double size = e.attributes.count("font-size") ? e.number("font-size") : 12;
      const double w = static_cast<double>(e.text.size()) * size * 0.6;
      const double x = e.number("x"), y = e.number("y");
      const std::string anchor = e.get("text-anchor");
      const double x0 = anchor == "end" ? x - w : anchor == "middle" ? x - w / 2 : x;
      CHECK_MESSAGE(!intersects({x0, y - size, x0 + w, y + 2}, legend), "'" << e.text << "'");
    }
  }
}

TEST_CASE("a single point, all-zero data, no series and non-finite values still draw") {
  SUBCASE("a single point") {
    const auto elements = parse_svg(line_plot_svg("t", "x", "y", {{"s", "#000", {{3, 7}}, {}}}));
    const auto circles = with_class(elements, "point");
    REQUIRE(circles.size() == 1);
    const Box area = box_of(with_class(elements, "plot-area").at(0));
    CHECK(circles[0].number("cx") > area.x0);
    CHECK(circles[0].number("cx") <= area.x1);
    CHECK(circles[0].number("cy") < area.y1);
    CHECK(circles[0].number("cy") >= area.y0);
  }
  SUBCASE("all zero") {
    const auto elements =
        parse_svg(line_plot_svg("t", "x", "y", {{"s", "#000", {{0, 0}, {0, 0}}, {}}}));
    for (const char* axis : {"tick-x", "tick-y"}) {
      const auto ticks = with_class(elements, axis);
      REQUIRE(ticks.size() >= 4);
      CHECK(ticks.front().text == "0");
      CHECK(label_value(ticks.back().text) == 1);
    }
  }
  SUBCASE("no series") {
    const auto elements = parse_svg(line_plot_svg("t", "x", "y", {}));
    CHECK(with_class(elements, "legend-box").empty());
    CHECK(with_class(elements, "point").empty());
  }
  SUBCASE("non-finite values are left out and break the line") {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    const auto elements = parse_svg(line_plot_svg(
        "t", "x", "y", {{"s", "#000", {{1, 1}, {2, nan}, {3, 3}, {inf, 4}, {5, 5}}, {}}}));
    CHECK(with_class(elements, "point").size() == 3);
    const auto paths = with_class(elements, "series");
    REQUIRE(paths.size() == 1);
    CHECK(paths[0].get("d").find('L') == std::string::npos);  // three separate moves
    CHECK(path_points(paths[0].get("d")).size() == 3);
    CHECK(label_value(with_class(elements, "tick-x").back().text) == 5);
  }
}

TEST_CASE("text is escaped") {
  const std::string title = "model <a&b> at grpc://h:1/?x='1'&y=\"2\"";
  const auto elements = parse_svg(
      line_plot_svg(title, "x < 1", "y & z", {{"p<99>", "#000", {{1, 1}}, {"load 'a' & \"b\""}}}));
  const auto titles = with_class(elements, "title");
  REQUIRE(titles.size() == 1);
  CHECK(titles[0].text == title);
  CHECK(with_class(elements, "point-label").at(0).text == "load 'a' & \"b\"");
}

TEST_CASE("write_line_plot writes the file, and says when it cannot") {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("sonic_line_plot_" + std::to_string(static_cast<long>(getpid())));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "plot.svg").string();
  const auto series = latency_curves();
  REQUIRE(sonic::bench::write_line_plot(path, "t", "x", "y", series));
  std::ifstream in(path);
  const std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(written == line_plot_svg("t", "x", "y", series));
  CHECK_FALSE(sonic::bench::write_line_plot((dir / "missing" / "plot.svg").string(), "t", "x", "y",
                                            series));
  std::filesystem::remove_all(dir);
}

// The registry of the metrics models make (sonic/custom_metrics.hpp, pb_utils.MetricFamily):
// what owners share, what they may not make, and the page as prometheus-cpp writes it. Each
// test uses a registry of its own, never the process's.
#include "sonic/custom_metrics.hpp"

#include <doctest/doctest.h>
#include <string>

using sonic::CustomMetricLimits;
using sonic::CustomMetricRegistry;
using sonic::MetricKind;
using sonic::StatusCode;

namespace {

bool has(const std::string& page, const std::string& line) {
  return page.find(line + "\n") != std::string::npos;
}

}  // namespace

TEST_CASE("custom metrics: owners making the same family and labels count into one metric") {
  CustomMetricRegistry registry;
  auto a = registry.owner();
  auto b = registry.owner();
  auto family_a = a->family("latency_ns", "time spent", MetricKind::Counter);
  auto family_b = b->family("latency_ns", "time spent", MetricKind::Counter);
  REQUIRE(family_a.ok());
  REQUIRE(family_b.ok());
  auto metric_a = a->metric(*family_a, {{"model", "m"}, {"version", "1"}}, std::nullopt);
  auto metric_b = b->metric(*family_b, {{"version", "1"}, {"model", "m"}}, std::nullopt);
  REQUIRE(metric_a.ok());
  REQUIRE(metric_b.ok());
  REQUIRE(a->increment(*metric_a, 2).ok());
  REQUIRE(b->increment(*metric_b, 3.5).ok());
  CHECK(*a->value(*metric_a) == 5.5);
  const std::string page = registry.render();
  CHECK(has(page, "# HELP latency_ns time spent"));
  CHECK(has(page, "# TYPE latency_ns counter"));
  CHECK(has(page, "latency_ns{model=\"m\",version=\"1\"} 5.5"));
  // One owner gone: the metric stays while the other uses it, then leaves the page.
  a.reset();
  CHECK(has(registry.render(), "latency_ns{model=\"m\",version=\"1\"} 5.5"));
  b.reset();
  CHECK(registry.render().empty());
}

TEST_CASE("custom metrics: the kinds take what Triton's core takes") {
  CustomMetricRegistry registry;
  auto owner = registry.owner();
  auto counter = owner->metric(*owner->family("c", "", MetricKind::Counter), {}, std::nullopt);
  auto gauge = owner->metric(*owner->family("g", "", MetricKind::Gauge), {}, std::nullopt);
  const auto histogram_family = *owner->family("h", "", MetricKind::Histogram);
  CHECK(owner->metric(histogram_family, {}, std::nullopt).error().code() ==
        StatusCode::InvalidArgument);  // a histogram needs buckets
  CHECK(owner
            ->metric(*owner->family("g", "", MetricKind::Gauge), {{"x", "y"}},
                     std::vector<double>{1.0})
            .error()
            .code() == StatusCode::InvalidArgument);  // and nothing else takes them
  CHECK(owner->metric(histogram_family, {}, std::vector<double>{2, 1}).error().code() ==
        StatusCode::InvalidArgument);  // bounds must increase
  auto histogram = owner->metric(histogram_family, {}, std::vector<double>{1, 2.5});
  REQUIRE(histogram.ok());
  CHECK(owner->increment(*counter, -1).error().code() == StatusCode::InvalidArgument);
  CHECK(owner->set(*counter, 1).error().code() == StatusCode::Unimplemented);
  CHECK(owner->observe(*gauge, 1).error().code() == StatusCode::Unimplemented);
  CHECK(owner->value(*histogram).error().code() == StatusCode::Unimplemented);
  REQUIRE(owner->set(*gauge, -4).ok());
  REQUIRE(owner->increment(*gauge, 1.25).ok());
  CHECK(*owner->value(*gauge) == -2.75);
  for (double v : {0.5, 1.0, 2.0, 7.0}) REQUIRE(owner->observe(*histogram, v).ok());
  const std::string page = registry.render();
  CHECK(has(page, "g -2.75"));
  CHECK(has(page, "h_count 4"));
  CHECK(has(page, "h_sum 10.5"));
  CHECK(has(page, "h_bucket{le=\"1\"} 2"));
  CHECK(has(page, "h_bucket{le=\"2.5\"} 3"));
  CHECK(has(page, "h_bucket{le=\"+Inf\"} 4"));
}

TEST_CASE("custom metrics: names, families that disagree and the server's own are refused") {
  CustomMetricRegistry registry;
  auto owner = registry.owner();
  for (const char* name : {"", "9lives", "has space", "nv_inference_count"}) {
    CHECK(owner->family(name, "", MetricKind::Gauge).error().code() == StatusCode::InvalidArgument);
  }
  REQUIRE(owner->family("one", "first", MetricKind::Gauge).ok());
  CHECK(owner->family("one", "first", MetricKind::Counter).error().code() ==
        StatusCode::InvalidArgument);
  CHECK(owner->family("one", "other", MetricKind::Gauge).error().code() ==
        StatusCode::InvalidArgument);
  const auto family = *owner->family("one", "first", MetricKind::Gauge);
  for (const char* label : {"__reserved", "le", "bad-name"}) {
    CHECK(owner->metric(family, {{label, "v"}}, std::nullopt).error().code() ==
          StatusCode::InvalidArgument);
  }
  // Label values and descriptions are escaped as the text format wants.
  auto escaped = registry.owner();
  auto f = escaped->family("quoted", "a \\ and\na line", MetricKind::Gauge);
  REQUIRE(escaped->metric(*f, {{"v", "say \"hi\"\n\\"}}, std::nullopt).ok());
  const std::string page = registry.render();
  CHECK(has(page, "# HELP quoted a \\\\ and\\na line"));
  CHECK(has(page, "quoted{v=\"say \\\"hi\\\"\\n\\\\\"} 0"));
}

TEST_CASE("custom metrics: an owner holds a bounded number, and released ones free room") {
  CustomMetricRegistry registry;
  CustomMetricLimits limits;
  limits.families = 2;
  limits.metrics = 3;
  auto owner = registry.owner(limits);
  auto family = *owner->family("f", "", MetricKind::Gauge);
  REQUIRE(owner->family("g", "", MetricKind::Gauge).ok());
  CHECK(owner->family("h", "", MetricKind::Gauge).error().code() == StatusCode::ResourceExhausted);
  CHECK(owner->family("f", "", MetricKind::Gauge).ok());  // one it has: no room needed
  std::vector<std::uint64_t> handles;
  for (int i = 0; i < 3; ++i) {
    handles.push_back(*owner->metric(family, {{"i", std::to_string(i)}}, std::nullopt));
  }
  CHECK(owner->metric(family, {{"i", "3"}}, std::nullopt).error().code() ==
        StatusCode::ResourceExhausted);
  // The same labels again are a second use of the same handle: released once, it stays.
  CHECK(*owner->metric(family, {{"i", "0"}}, std::nullopt) == handles[0]);
  owner->release(handles[0]);
  CHECK(registry.render().find("f{i=\"0\"}") != std::string::npos);
  owner->release(handles[0]);
  CHECK(registry.render().find("f{i=\"0\"}") == std::string::npos);
  CHECK(owner->set(handles[0], 1).error().code() == StatusCode::InvalidArgument);
  owner->release(handles[0]);  // once more: ignored
  CHECK(owner->metric(family, {{"i", "3"}}, std::nullopt).ok());
}

// The metrics port's page: Triton's family names and types, the `model` and `version` labels,
// label values escaped as the exposition format says, values (microseconds) from known
// statistics, and the host's CPU and memory read as Triton reads them.
#include "metrics_text.hpp"

#include <doctest/doctest.h>

#include <string>

using sonic::Duration;
using sonic::ModelStatistics;
using sonic::server::HostUsage;
using sonic::server::HostUsageReader;

namespace {

ModelStatistics statistics(std::string name, std::string version) {
  ModelStatistics s;
  s.name = std::move(name);
  s.version = std::move(version);
  s.success = Duration{7, 7'000'000};  // 7 requests, 7 ms in all
  s.fail = Duration{4, 5'000};
  s.failures.rejected = 1;
  s.failures.canceled = 2;
  s.failures.other = 1;
  s.pending = 3;
  s.inference_count = 12;
  s.execution_count = 5;
  s.queue = Duration{7, 1'234'567};  // 1234.567 us: whole microseconds
  s.compute_input = Duration{5, 2'000};
  s.compute_infer = Duration{5, 3'000'000};
  s.compute_output = Duration{5, 4'999};
  return s;
}

bool has_line(const std::string& page, const std::string& line) {
  return page.find("\n" + line + "\n") != std::string::npos || page.rfind(line + "\n", 0) == 0;
}

}  // namespace

TEST_CASE("the page has Triton's families, types and per-model samples") {
  HostUsage host;
  host.cpu_utilization = 0.25;
  host.memory_total_bytes = 1000;
  host.memory_used_bytes = 400;
  const std::string page = sonic::server::render_metrics({statistics("jet", "1")}, host);
  CHECK(has_line(page, "# TYPE nv_inference_request_success counter"));
  CHECK(has_line(page, "nv_inference_request_success{model=\"jet\",version=\"1\"} 7"));
  CHECK(has_line(page, "# TYPE nv_inference_request_failure counter"));
  // One failure sample per cause, all four of Triton's reasons.
  CHECK(has_line(
      page, "nv_inference_request_failure{model=\"jet\",version=\"1\",reason=\"REJECTED\"} 1"));
  CHECK(has_line(
      page, "nv_inference_request_failure{model=\"jet\",version=\"1\",reason=\"CANCELED\"} 2"));
  CHECK(has_line(page,
                 "nv_inference_request_failure{model=\"jet\",version=\"1\",reason=\"BACKEND\"} 0"));
  CHECK(has_line(page,
                 "nv_inference_request_failure{model=\"jet\",version=\"1\",reason=\"OTHER\"} 1"));
  CHECK(has_line(page, "# TYPE nv_inference_pending_request_count gauge"));
  CHECK(has_line(page, "nv_inference_pending_request_count{model=\"jet\",version=\"1\"} 3"));
  CHECK(has_line(page, "# TYPE nv_inference_count counter"));
  CHECK(has_line(page, "nv_inference_count{model=\"jet\",version=\"1\"} 12"));
  CHECK(has_line(page, "# TYPE nv_inference_exec_count counter"));
  CHECK(has_line(page, "nv_inference_exec_count{model=\"jet\",version=\"1\"} 5"));
  CHECK(has_line(page, "# TYPE nv_inference_request_duration_us counter"));
  CHECK(has_line(page, "nv_inference_request_duration_us{model=\"jet\",version=\"1\"} 7000"));
  CHECK(has_line(page, "nv_inference_queue_duration_us{model=\"jet\",version=\"1\"} 1234"));
  CHECK(has_line(page, "nv_inference_compute_input_duration_us{model=\"jet\",version=\"1\"} 2"));
  CHECK(has_line(page, "nv_inference_compute_infer_duration_us{model=\"jet\",version=\"1\"} 3000"));
  CHECK(has_line(page, "nv_inference_compute_output_duration_us{model=\"jet\",version=\"1\"} 4"));
  CHECK(has_line(page, "# TYPE nv_cpu_utilization gauge"));
  CHECK(has_line(page, "nv_cpu_utilization 0.25"));
  CHECK(has_line(page, "# TYPE nv_cpu_memory_total_bytes gauge"));
  CHECK(has_line(page, "nv_cpu_memory_total_bytes 1000"));
  CHECK(has_line(page, "# TYPE nv_cpu_memory_used_bytes gauge"));
  CHECK(has_line(page, "nv_cpu_memory_used_bytes 400"));
  // Every family has its HELP line before its TYPE line.
  CHECK(page.find("# HELP nv_inference_request_success ") <
        page.find("# TYPE nv_inference_request_success "));
  CHECK(page.back() == '\n');
}

TEST_CASE("a family's samples are grouped under it, one per model version") {
  const std::string page =
      sonic::server::render_metrics({statistics("a", "1"), statistics("b", "2")}, HostUsage{});
  const auto type = page.find("# TYPE nv_inference_count counter");
  const auto a = page.find("nv_inference_count{model=\"a\",version=\"1\"} 12");
  const auto b = page.find("nv_inference_count{model=\"b\",version=\"2\"} 12");
  const auto next = page.find("# HELP nv_inference_exec_count");
  REQUIRE(type != std::string::npos);
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  CHECK(type < a);
  CHECK(a < b);
  CHECK(b < next);
  // Host values that could not be read are left out, not reported as 0.
  CHECK(page.find("nv_cpu_") == std::string::npos);
}

TEST_CASE("label values are escaped as the exposition format says") {
  CHECK(sonic::server::escape_label_value("plain-name_1.0") == "plain-name_1.0");
  CHECK(sonic::server::escape_label_value("a\\b") == "a\\\\b");
  CHECK(sonic::server::escape_label_value("say \"hi\"") == "say \\\"hi\\\"");
  CHECK(sonic::server::escape_label_value("two\nlines") == "two\\nlines");
  const std::string page =
      sonic::server::render_metrics({statistics("we\"ird\\na\nme", "1")}, HostUsage{});
  CHECK(has_line(page, "nv_inference_count{model=\"we\\\"ird\\\\na\\nme\",version=\"1\"} 12"));
}

TEST_CASE("CPU utilization and memory are read as Triton reads them") {
  // user nice system idle iowait irq softirq steal guest guest_nice
  const char* before = "cpu  100 0 100 700 100 0 0 0 50 0";
  const char* after = "cpu  200 50 150 900 200 25 25 0 80 0";
  // busy: 100 + 50 + 50 + 25 + 25 + 0 = 250; idle + iowait: 200 + 100 = 300; guest not counted
  auto share = HostUsageReader::cpu_share(before, after);
  REQUIRE(share);
  CHECK(*share == doctest::Approx(250.0 / 550.0));
  CHECK_FALSE(HostUsageReader::cpu_share(before, before));  // no time passed
  CHECK_FALSE(HostUsageReader::cpu_share("intr 1 2 3", after));

  HostUsage usage;
  HostUsageReader::parse_meminfo(
      "MemTotal:       16000 kB\nMemFree:         1000 kB\nMemAvailable:    6000 kB\n", usage);
  REQUIRE(usage.memory_total_bytes);
  REQUIRE(usage.memory_used_bytes);
  CHECK(*usage.memory_total_bytes == 16000u * 1024);
  CHECK(*usage.memory_used_bytes == 10000u * 1024);  // total less available, not less free

  HostUsageReader reader;
  const HostUsage now = reader.read();  // this host's /proc
  REQUIRE(now.memory_total_bytes);
  CHECK(*now.memory_total_bytes > 0);
  if (now.cpu_utilization) {
    CHECK(*now.cpu_utilization >= 0.0);
    CHECK(*now.cpu_utilization <= 1.0);
  }
}

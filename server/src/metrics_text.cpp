#include "metrics_text.hpp"

#include <array>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>

namespace sonic::server {

namespace {

// One family of the page: Triton's name and type, and a HELP text of the same meaning.
// Triton's families and HELP texts are those its core registers (src/metrics.cc of
// triton-inference-server/core); the per-model ones carry the labels `model` and `version` (the
// version as a decimal string), as src/metric_model_reporter.cc builds them. The durations are
// counters of cumulative microseconds, Triton's default ("counter_latencies"); its optional
// summaries (nv_inference_*_summary_us) are not served.
struct Family {
  const char* name;
  const char* type;
  const char* help;
  std::uint64_t (*value)(const ModelStatistics&);
};

std::uint64_t microseconds(const Duration& d) { return d.ns / 1000; }

// What each family counts, from sonic's statistics (the same numbers ModelStatistics answers):
// - nv_inference_request_success: requests that succeeded, whatever their batch size (the
//   failures, by cause, are rendered apart: see kFailureReasons).
// - nv_inference_count: inferences, each batch element counted; nv_inference_exec_count: model
//   executions (a batch of merged requests is one).
// - nv_inference_request_duration_us: end-to-end time of the successful requests on the server
//   (Triton adds a request's duration when it succeeds, as its statistics' "success" does).
// - queue and compute input / infer / output: the phases ModelStatistics reports.
// - nv_inference_pending_request_count: a gauge, the requests queued for an execution that has
//   not started (in the executor's pool or a model's batcher; a connection's own queue, which
//   holds back a client's requests past its share of the model threads, is not counted).
const std::array<Family, 9> kModelFamilies{{
    {"nv_inference_request_success", "counter",
     "Inference requests that succeeded, of any batch size",
     [](const ModelStatistics& s) { return s.success.count; }},
    {"nv_inference_count", "counter", "Inferences made, each element of a batch counted",
     [](const ModelStatistics& s) { return s.inference_count; }},
    {"nv_inference_exec_count", "counter", "Executions of the model (merged requests run as one)",
     [](const ModelStatistics& s) { return s.execution_count; }},
    {"nv_inference_request_duration_us", "counter",
     "Total time of the successful requests on the server, in microseconds",
     [](const ModelStatistics& s) { return microseconds(s.success); }},
    {"nv_inference_queue_duration_us", "counter",
     "Total time requests waited for an execution, in microseconds",
     [](const ModelStatistics& s) { return microseconds(s.queue); }},
    {"nv_inference_compute_input_duration_us", "counter",
     "Total time spent preparing inputs, in microseconds",
     [](const ModelStatistics& s) { return microseconds(s.compute_input); }},
    {"nv_inference_compute_infer_duration_us", "counter",
     "Total time spent running the model, in microseconds",
     [](const ModelStatistics& s) { return microseconds(s.compute_infer); }},
    {"nv_inference_compute_output_duration_us", "counter",
     "Total time spent preparing outputs, in microseconds",
     [](const ModelStatistics& s) { return microseconds(s.compute_output); }},
    {"nv_inference_pending_request_count", "gauge",
     "Requests waiting now for an execution of the model",
     [](const ModelStatistics& s) { return s.pending; }},
}};

// nv_inference_request_failure: failed requests, whatever their batch size, one sample per
// cause under the label `reason`, all four of Triton's present from the start as Triton
// creates them (metric_model_reporter.cc).
struct FailureReasonSample {
  const char* reason;
  std::uint64_t (*value)(const ModelStatistics&);
};
const std::array<FailureReasonSample, 4> kFailureReasons{{
    {"REJECTED", [](const ModelStatistics& s) { return s.failures.rejected; }},
    {"CANCELED", [](const ModelStatistics& s) { return s.failures.canceled; }},
    {"BACKEND", [](const ModelStatistics& s) { return s.failures.backend; }},
    {"OTHER", [](const ModelStatistics& s) { return s.failures.other; }},
}};

// One sample of a per-model family: name{model="..",version=".."[,extra]} value.
void model_sample(std::string& out, const char* name, const ModelStatistics& model,
                  std::string_view extra_label, std::uint64_t value) {
  out.append(name)
      .append("{model=\"")
      .append(escape_label_value(model.name))
      .append("\",version=\"")
      .append(escape_label_value(model.version))
      .append("\"")
      .append(extra_label)
      .append("} ")
      .append(std::to_string(value))
      .append("\n");
}

void header(std::string& out, const char* name, const char* type, const char* help) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

// A double as Prometheus reads it: shortest round-trip form is not needed for a share of 0..1.
std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

}  // namespace

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
  return out;
}

std::string render_metrics(const std::vector<ModelStatistics>& models, const HostUsage& host) {
  std::string out;
  // A family's samples come together after its HELP and TYPE lines, as the format requires.
  for (const Family& family : kModelFamilies) {
    header(out, family.name, family.type, family.help);
    for (const ModelStatistics& model : models) {
      model_sample(out, family.name, model, {}, family.value(model));
    }
  }
  header(out, "nv_inference_request_failure", "counter",
         "Inference requests that failed, of any batch size, by cause");
  for (const ModelStatistics& model : models) {
    for (const auto& [reason, value] : kFailureReasons) {
      model_sample(out, "nv_inference_request_failure", model,
                   std::string(",reason=\"") + reason + "\"", value(model));
    }
  }

  // Triton's CPU metrics are the host's, not the process's: the busy share of all CPUs from
  // /proc/stat between polls, and MemTotal and MemTotal - MemAvailable from /proc/meminfo.
  if (host.cpu_utilization) {
    header(out, "nv_cpu_utilization", "gauge",
           "Share of the host's CPU time spent busy since the last scrape, 0 to 1");
    out.append("nv_cpu_utilization ").append(number(*host.cpu_utilization)).append("\n");
  }
  if (host.memory_total_bytes) {
    header(out, "nv_cpu_memory_total_bytes", "gauge", "Host memory (RAM) in all, in bytes");
    out.append("nv_cpu_memory_total_bytes ")
        .append(std::to_string(*host.memory_total_bytes))
        .append("\n");
  }
  if (host.memory_used_bytes) {
    header(out, "nv_cpu_memory_used_bytes", "gauge",
           "Host memory (RAM) in use (total less available), in bytes");
    out.append("nv_cpu_memory_used_bytes ")
        .append(std::to_string(*host.memory_used_bytes))
        .append("\n");
  }
  return out;
}

std::optional<double> HostUsageReader::cpu_share(std::string_view before, std::string_view after) {
  // user nice system idle iowait irq softirq steal guest guest_nice; guest time is already in
  // user's, so, as Triton, busy = user + nice + system + irq + softirq + steal and not busy =
  // idle + iowait.
  auto fields = [](std::string_view line, std::array<std::uint64_t, 8>& out) {
    std::istringstream in{std::string(line)};
    std::string label;
    in >> label;
    if (label != "cpu") return false;
    for (auto& field : out) {
      if (!(in >> field)) return false;
    }
    return true;
  };
  std::array<std::uint64_t, 8> a{}, b{};
  if (!fields(before, a) || !fields(after, b)) return std::nullopt;
  auto delta = [&](std::size_t i) { return b[i] > a[i] ? b[i] - a[i] : 0; };
  const std::uint64_t busy = delta(0) + delta(1) + delta(2) + delta(5) + delta(6) + delta(7);
  const std::uint64_t idle = delta(3) + delta(4);
  if (busy + idle == 0) return std::nullopt;
  return static_cast<double>(busy) / static_cast<double>(busy + idle);
}

void HostUsageReader::parse_meminfo(std::string_view text, HostUsage& usage) {
  std::istringstream in{std::string(text)};
  std::string line;
  std::optional<std::uint64_t> total, available;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string name;
    std::uint64_t kib = 0;
    if (!(fields >> name >> kib)) continue;
    if (name == "MemTotal:") total = kib * 1024;
    if (name == "MemAvailable:") available = kib * 1024;
  }
  if (!total) return;
  usage.memory_total_bytes = total;
  if (available && *available <= *total) usage.memory_used_bytes = *total - *available;
}

HostUsage HostUsageReader::read() {
  HostUsage usage;
  std::string cpu_line;
  {
    std::ifstream stat("/proc/stat");
    std::getline(stat, cpu_line);
  }
  if (!cpu_line.empty()) {
    std::lock_guard<std::mutex> lock(mutex_);
    // Two scrapes within one clock tick: the share measured last still holds.
    if (auto share = cpu_share(last_cpu_line_, cpu_line)) {
      last_share_ = *share;
      last_cpu_line_ = cpu_line;
    }
    usage.cpu_utilization = last_share_;
  }
  std::ifstream meminfo("/proc/meminfo");
  if (meminfo) {
    std::string text((std::istreambuf_iterator<char>(meminfo)), std::istreambuf_iterator<char>());
    parse_meminfo(text, usage);
  }
  return usage;
}

}  // namespace sonic::server

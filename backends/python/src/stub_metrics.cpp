#include "stub_metrics.hpp"

#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "stub_messages.hpp"

namespace sonic::python_backend {

using json = nlohmann::json;

namespace {

// Values travel as text ("nan", "inf" included), which JSON numbers cannot carry.
Result<double> number_of(const json& value) {
  if (value.is_number()) return value.get<double>();
  if (value.is_string()) {
    const std::string text = value.get<std::string>();
    char* end = nullptr;
    const double parsed = std::strtod(text.c_str(), &end);
    if (!text.empty() && end == text.c_str() + text.size()) return parsed;
  }
  return Error(StatusCode::InvalidArgument, "a metric's value must be a number");
}

Result<std::uint64_t> handle_of(const json& header, const char* key) {
  auto it = header.find(key);
  if (it == header.end() || !it->is_number_unsigned()) {
    return Error(StatusCode::InvalidArgument, std::string("no ") + key + " handle");
  }
  return it->get<std::uint64_t>();
}

Result<json> run(CustomMetricOwner& owner, const json& header) {
  auto op = string_field(header, "op", "");
  if (!op) return op.error();
  if (*op == "release") return json::object();  // releases only (above)
  if (*op == "family") {
    auto name = string_field(header, "name", "");
    auto description = string_field(header, "description", "");
    auto kind = string_field(header, "kind", "");
    if (!name) return name.error();
    if (!description) return description.error();
    if (!kind) return kind.error();
    const std::map<std::string, MetricKind> kinds{{"COUNTER", MetricKind::Counter},
                                                  {"GAUGE", MetricKind::Gauge},
                                                  {"HISTOGRAM", MetricKind::Histogram}};
    auto found = kinds.find(*kind);
    if (found == kinds.end()) {
      return Error(StatusCode::InvalidArgument, "unknown metric kind '" + *kind + "'");
    }
    auto handle = owner.family(*name, *description, found->second);
    if (!handle) return handle.error();
    return json{{"handle", *handle}};
  }
  if (*op == "metric") {
    auto family = handle_of(header, "family");
    if (!family) return family.error();
    std::map<std::string, std::string> labels;
    auto given = header.find("labels");
    if (given != header.end() && !given->is_null()) {
      if (!given->is_object()) return Error(StatusCode::InvalidArgument, "labels: not a dict");
      for (const auto& [key, value] : given->items()) {
        if (!value.is_string()) {
          return Error(StatusCode::InvalidArgument, "label '" + key + "': not a string");
        }
        labels[key] = value.get<std::string>();
      }
    }
    std::optional<std::vector<double>> buckets;
    auto bounds = header.find("buckets");
    if (bounds != header.end() && !bounds->is_null()) {
      if (!bounds->is_array()) return Error(StatusCode::InvalidArgument, "buckets: not a list");
      buckets.emplace();
      for (const auto& bound : *bounds) {
        auto value = number_of(bound);
        if (!value) return value.error();
        buckets->push_back(*value);
      }
    }
    auto handle = owner.metric(*family, labels, buckets);
    if (!handle) return handle.error();
    return json{{"handle", *handle}};
  }
  auto metric = handle_of(header, "metric");
  if (!metric) return metric.error();
  if (*op == "value") {
    auto value = owner.value(*metric);
    if (!value) return value.error();
    return json{{"value", prometheus_number(*value)}};
  }
  auto value = number_of(header.value("value", json()));
  if (!value) return value.error();
  Result<void> done = *op == "increment" ? owner.increment(*metric, *value)
                      : *op == "set"     ? owner.set(*metric, *value)
                      : *op == "observe"
                          ? owner.observe(*metric, *value)
                          : Result<void>(Error(StatusCode::InvalidArgument,
                                               "unknown metric operation '" + *op + "'"));
  if (!done) return done.error();
  return json::object();
}

}  // namespace

json answer_metric(CustomMetricOwner& owner, const json& header) {
  // The metrics the stub's model deleted since its last call (Metric.__del__), first.
  auto released = header.find("release");
  if (released != header.end() && released->is_array()) {
    for (const auto& handle : *released) {
      if (handle.is_number_unsigned()) owner.release(handle.get<std::uint64_t>());
    }
  }
  auto answer = run(owner, header);
  json out = answer ? std::move(*answer) : json{{"error", error_json(answer.error())}};
  out["type"] = "metric_answer";
  out["call"] = header.value("call", json());
  return out;
}

}  // namespace sonic::python_backend

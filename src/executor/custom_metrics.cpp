#include "sonic/custom_metrics.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace sonic {

// A family lives while a metric of it or an owner that made it does; the registry and the
// family only point at what lives (weak), and forget what ended when an owner goes.
struct CustomMetricOwner::Family {
  std::string name;
  std::string description;
  MetricKind kind;
  std::map<std::map<std::string, std::string>, std::weak_ptr<Metric>> metrics;
};

struct CustomMetricOwner::Metric {
  std::shared_ptr<Family> family;
  std::map<std::string, std::string> labels;
  double value = 0;                   // counter, gauge
  std::vector<double> bounds;         // histogram: bucket upper bounds
  std::vector<std::uint64_t> counts;  // histogram: observations <= each bound (not cumulative)
  std::uint64_t count = 0;
  double sum = 0;
};

namespace {

const char* kind_name(MetricKind kind) {
  switch (kind) {
    case MetricKind::Counter: return "counter";
    case MetricKind::Gauge: return "gauge";
    case MetricKind::Histogram: return "histogram";
  }
  return "untyped";
}

// Triton's words for a kind (TRITONSERVER_METRIC_KIND_...), in its errors.
std::string triton_kind(MetricKind kind) {
  std::string name = kind_name(kind);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](char c) { return static_cast<char>(c - 'a' + 'A'); });
  return "TRITONSERVER_METRIC_KIND_" + name;
}

// Prometheus' data model: metric names [a-zA-Z_:][a-zA-Z0-9_:]*, label names
// [a-zA-Z_][a-zA-Z0-9_]* and not beginning with "__" (reserved).
bool valid_name(const std::string& name, bool label) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (!label && c == ':');
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return !(label && name.rfind("__", 0) == 0);
}

void append_escaped(std::string& out, const std::string& text, bool label_value) {
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && label_value) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

void append_labels(std::string& out, const std::map<std::string, std::string>& labels,
                   const std::string& le = {}) {
  if (labels.empty() && le.empty()) return;
  out += '{';
  bool first = true;
  for (const auto& [key, value] : labels) {
    if (!first) out += ',';
    first = false;
    out.append(key).append("=\"");
    append_escaped(out, value, true);
    out += '"';
  }
  if (!le.empty()) out.append(first ? "" : ",").append("le=\"").append(le).append("\"");
  out += '}';
}

}  // namespace

std::string prometheus_number(double value) {
  // As prometheus-cpp's text serializer writes a value: "Nan", "+Inf", "-Inf", else the shortest
  // text that reads back the same (std::to_chars).
  if (std::isnan(value)) return "Nan";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char text[64];
  const auto written = std::to_chars(text, text + sizeof text, value);
  return std::string(text, written.ptr);
}

CustomMetricOwner::CustomMetricOwner(CustomMetricRegistry& registry, CustomMetricLimits limits)
    : registry_(registry), limits_(limits) {}

CustomMetricOwner::~CustomMetricOwner() {
  std::lock_guard lock(registry_.mutex_);
  metrics_.clear();
  families_.clear();
  for (auto it = registry_.families_.begin(); it != registry_.families_.end();) {
    if (auto family = it->second.lock()) {
      for (auto m = family->metrics.begin(); m != family->metrics.end();) {
        m = m->second.expired() ? family->metrics.erase(m) : std::next(m);
      }
      ++it;
    } else {
      it = registry_.families_.erase(it);
    }
  }
}

Result<std::uint64_t> CustomMetricOwner::family(const std::string& name,
                                                const std::string& description, MetricKind kind) {
  if (name.size() > limits_.name_bytes || !valid_name(name, false)) {
    return Error(StatusCode::InvalidArgument,
                 "invalid metric family name '" + name.substr(0, limits_.name_bytes) +
                     "' (Prometheus' names: [a-zA-Z_:][a-zA-Z0-9_:]*, at most " +
                     std::to_string(limits_.name_bytes) + " bytes)");
  }
  if (name.rfind("nv_", 0) == 0) {
    return Error(StatusCode::InvalidArgument,
                 "metric family name '" + name + "': names beginning nv_ are the server's own");
  }
  if (description.size() > limits_.text_bytes) {
    return Error(StatusCode::InvalidArgument, "the description of metric family '" + name +
                                                  "' is longer than " +
                                                  std::to_string(limits_.text_bytes) + " bytes");
  }
  std::lock_guard lock(registry_.mutex_);
  auto& slot = registry_.families_[name];
  auto family = slot.lock();
  if (family && (family->kind != kind || family->description != description)) {
    // prometheus-cpp's Registry refuses a second family of one name with another type or help.
    return Error(StatusCode::InvalidArgument,
                 "metric family '" + name + "' exists with another kind or description");
  }
  if (family) {
    for (std::size_t i = 0; i < families_.size(); ++i) {
      if (families_[i] == family) return i;
    }
  }
  if (families_.size() >= limits_.families) {
    if (!family) registry_.families_.erase(name);
    return Error(
        StatusCode::ResourceExhausted,
        "a model may make at most " + std::to_string(limits_.families) + " metric families");
  }
  if (!family) {
    family = std::make_shared<Family>(Family{name, description, kind, {}});
    slot = family;
  }
  families_.push_back(family);
  return families_.size() - 1;
}

Result<std::uint64_t> CustomMetricOwner::metric(std::uint64_t family_handle,
                                                const std::map<std::string, std::string>& labels,
                                                const std::optional<std::vector<double>>& buckets) {
  if (labels.size() > limits_.labels) {
    return Error(StatusCode::InvalidArgument,
                 "a metric may have at most " + std::to_string(limits_.labels) + " labels");
  }
  for (const auto& [key, value] : labels) {
    if (key.size() > limits_.name_bytes || !valid_name(key, true) || key == "le") {
      return Error(StatusCode::InvalidArgument,
                   "invalid label name '" + key.substr(0, limits_.name_bytes) + "'");
    }
    if (value.size() > limits_.text_bytes) {
      return Error(StatusCode::InvalidArgument, "the value of label '" + key + "' is longer than " +
                                                    std::to_string(limits_.text_bytes) + " bytes");
    }
  }
  if (buckets) {
    if (buckets->size() > limits_.buckets) {
      return Error(StatusCode::InvalidArgument,
                   "a histogram may have at most " + std::to_string(limits_.buckets) + " buckets");
    }
    for (std::size_t i = 0; i < buckets->size(); ++i) {
      if (std::isnan((*buckets)[i]) || (i > 0 && !((*buckets)[i - 1] < (*buckets)[i]))) {
        return Error(StatusCode::InvalidArgument, "a histogram's bucket boundaries must increase");
      }
    }
  }
  std::lock_guard lock(registry_.mutex_);
  if (family_handle >= families_.size()) {
    return Error(StatusCode::InvalidArgument, "no such metric family");
  }
  const auto& family = families_[family_handle];
  if ((family->kind == MetricKind::Histogram) != buckets.has_value()) {
    // Triton's core: "Bucket boundaries not found in Metric args." / "Unexpected args found".
    return Error(StatusCode::InvalidArgument, family->kind == MetricKind::Histogram
                                                  ? "Missing required buckets."
                                                  : "Unexpected buckets found.");
  }
  auto& slot = family->metrics[labels];
  auto metric = slot.lock();
  if (metric) {
    for (std::size_t i = 0; i < metrics_.size(); ++i) {
      if (metrics_[i].metric == metric) {
        ++metrics_[i].uses;
        return i;
      }
    }
  }
  if (live_metrics_ >= limits_.metrics) {
    if (!metric) family->metrics.erase(labels);
    return Error(StatusCode::ResourceExhausted,
                 "a model may make at most " + std::to_string(limits_.metrics) + " metrics");
  }
  if (!metric) {
    metric = std::make_shared<Metric>();
    metric->family = family;
    metric->labels = labels;
    if (buckets) {
      metric->bounds = *buckets;
      metric->counts.assign(buckets->size(), 0);
    }
    slot = metric;
  }
  ++live_metrics_;
  for (std::size_t i = 0; i < metrics_.size(); ++i) {
    if (!metrics_[i].metric) {
      metrics_[i] = {metric, 1};
      return i;
    }
  }
  metrics_.push_back({metric, 1});
  return metrics_.size() - 1;
}

void CustomMetricOwner::release(std::uint64_t handle) {
  std::lock_guard lock(registry_.mutex_);
  if (handle >= metrics_.size() || metrics_[handle].uses == 0) return;
  if (--metrics_[handle].uses > 0) return;
  auto family = metrics_[handle].metric->family;
  const auto labels = metrics_[handle].metric->labels;
  metrics_[handle].metric.reset();
  --live_metrics_;
  auto it = family->metrics.find(labels);
  if (it != family->metrics.end() && it->second.expired()) family->metrics.erase(it);
}

// Under registry_.mutex_.
Result<std::shared_ptr<CustomMetricOwner::Metric>> CustomMetricOwner::find(std::uint64_t metric) {
  if (metric >= metrics_.size() || !metrics_[metric].metric) {
    return Error(StatusCode::InvalidArgument, "no such metric");
  }
  return metrics_[metric].metric;
}

Result<void> CustomMetricOwner::increment(std::uint64_t handle, double value) {
  std::lock_guard lock(registry_.mutex_);
  auto metric = find(handle);
  if (!metric) return metric.error();
  const MetricKind kind = (*metric)->family->kind;
  if (kind == MetricKind::Histogram) {
    return Error(StatusCode::Unimplemented, triton_kind(kind) + " does not support Increment");
  }
  if (kind == MetricKind::Counter && !(value >= 0)) {
    return Error(StatusCode::InvalidArgument,
                 "TRITONSERVER_METRIC_KIND_COUNTER can only be incremented monotonically by "
                 "non-negative values.");
  }
  (*metric)->value += value;
  return {};
}

Result<void> CustomMetricOwner::set(std::uint64_t handle, double value) {
  std::lock_guard lock(registry_.mutex_);
  auto metric = find(handle);
  if (!metric) return metric.error();
  const MetricKind kind = (*metric)->family->kind;
  if (kind != MetricKind::Gauge) {
    return Error(StatusCode::Unimplemented, triton_kind(kind) + " does not support Set");
  }
  (*metric)->value = value;
  return {};
}

Result<void> CustomMetricOwner::observe(std::uint64_t handle, double value) {
  std::lock_guard lock(registry_.mutex_);
  auto metric = find(handle);
  if (!metric) return metric.error();
  auto& m = **metric;
  if (m.family->kind != MetricKind::Histogram) {
    return Error(StatusCode::Unimplemented,
                 triton_kind(m.family->kind) + " does not support Observe");
  }
  const auto at = std::lower_bound(m.bounds.begin(), m.bounds.end(), value);
  if (at != m.bounds.end()) ++m.counts[static_cast<std::size_t>(at - m.bounds.begin())];
  ++m.count;
  m.sum += value;
  return {};
}

Result<double> CustomMetricOwner::value(std::uint64_t handle) {
  std::lock_guard lock(registry_.mutex_);
  auto metric = find(handle);
  if (!metric) return metric.error();
  if ((*metric)->family->kind == MetricKind::Histogram) {
    return Error(StatusCode::Unimplemented,
                 "TRITONSERVER_METRIC_KIND_HISTOGRAM does not support Value");
  }
  return (*metric)->value;
}

CustomMetricRegistry& CustomMetricRegistry::global() {
  static CustomMetricRegistry* registry = new CustomMetricRegistry();  // never destroyed
  return *registry;
}

std::shared_ptr<CustomMetricOwner> CustomMetricRegistry::owner(CustomMetricLimits limits) {
  return std::shared_ptr<CustomMetricOwner>(new CustomMetricOwner(*this, limits));
}

std::string CustomMetricRegistry::render() const {
  std::string out;
  std::lock_guard lock(mutex_);
  for (const auto& [name, weak] : families_) {
    auto family = weak.lock();
    if (!family) continue;
    std::string lines;
    for (const auto& [labels, weak_metric] : family->metrics) {
      auto metric = weak_metric.lock();
      if (!metric) continue;
      if (family->kind != MetricKind::Histogram) {
        lines.append(name);
        append_labels(lines, labels);
        lines.append(" ").append(prometheus_number(metric->value)).append("\n");
        continue;
      }
      lines.append(name).append("_count");
      append_labels(lines, labels);
      lines.append(" ").append(std::to_string(metric->count)).append("\n");
      lines.append(name).append("_sum");
      append_labels(lines, labels);
      lines.append(" ").append(prometheus_number(metric->sum)).append("\n");
      std::uint64_t cumulative = 0;
      for (std::size_t i = 0; i <= metric->bounds.size(); ++i) {
        const bool last = i == metric->bounds.size();
        cumulative = last ? metric->count : cumulative + metric->counts[i];
        lines.append(name).append("_bucket");
        append_labels(lines, labels, last ? "+Inf" : prometheus_number(metric->bounds[i]));
        lines.append(" ").append(std::to_string(cumulative)).append("\n");
      }
    }
    if (lines.empty()) continue;  // prometheus-cpp writes no family without a metric
    out.append("# HELP ").append(name).append(" ");
    append_escaped(out, family->description, false);
    out.append("\n# TYPE ").append(name).append(" ").append(kind_name(family->kind)).append("\n");
    out += lines;
  }
  return out;
}

}  // namespace sonic

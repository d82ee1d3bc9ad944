// sonic — metrics that models define (Triton's custom metrics: pb_utils.MetricFamily and its
// Metric, TRITONSERVER_MetricFamilyNew and TRITONSERVER_MetricNew in Triton's core), kept in one
// registry per process and served on the server's metrics port after its own metrics, in
// Prometheus' text format as Triton's (prometheus-cpp) renders them.
//
// As in Triton, a family is known by its name across the process: a second family of the same
// name, kind and description is the first one, and a metric is known by its family and its
// labels, so that the instances of a model (or several models) that make the same metric count
// into one. What one model may make is bounded (CustomMetricLimits), so that a model cannot grow
// the server's memory without limit; its metrics go away when its owner (the model's load) does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "sonic/detail/export.hpp"
#include "sonic/error.hpp"

namespace sonic {

/// The kinds of Triton's TRITONSERVER_MetricKind.
enum class MetricKind { Counter, Gauge, Histogram };

/// What one owner (one model's load) may make; past a limit, a make fails RESOURCE_EXHAUSTED.
struct CustomMetricLimits {
  std::size_t families = 64;      ///< families an owner uses
  std::size_t metrics = 1024;     ///< metrics an owner uses at once, in all its families
  std::size_t labels = 16;        ///< labels of one metric
  std::size_t name_bytes = 256;   ///< a family's or a label's name
  std::size_t text_bytes = 1024;  ///< a family's description, a label's value
  std::size_t buckets = 64;       ///< a histogram's bucket boundaries
};

class CustomMetricRegistry;

/// The families and metrics one model's load made, by the handles it was given (small numbers,
/// in the order it made them): an owner can reach only what it made. Its references end when
/// it is destroyed, and a family or metric that nobody else uses leaves the page. Thread-safe.
class SONIC_EXPORT CustomMetricOwner {
 public:
  ~CustomMetricOwner();
  CustomMetricOwner(const CustomMetricOwner&) = delete;
  CustomMetricOwner& operator=(const CustomMetricOwner&) = delete;

  /// The family `name` (Prometheus' metric name rules; not "nv_", the server's own), made if no
  /// owner has it. INVALID_ARGUMENT when one exists with another kind or description.
  Result<std::uint64_t> family(const std::string& name, const std::string& description,
                               MetricKind kind);
  /// The metric of family handle `family` with `labels`; `buckets` (upper bounds, increasing)
  /// for a histogram and for nothing else. Two calls with the same labels get the same metric.
  Result<std::uint64_t> metric(std::uint64_t family,
                               const std::map<std::string, std::string>& labels,
                               const std::optional<std::vector<double>>& buckets);
  /// Counter (by a non-negative value) and gauge only.
  Result<void> increment(std::uint64_t metric, double value);
  /// Gauge only.
  Result<void> set(std::uint64_t metric, double value);
  /// Histogram only.
  Result<void> observe(std::uint64_t metric, double value);
  /// Ends one use of a handle metric() gave (Triton removes a metric when its Python object is
  /// deleted): after the last, the handle is free and, when no other owner uses the metric, it
  /// leaves the page. An unknown handle is ignored.
  void release(std::uint64_t metric);
  /// Counter and gauge only.
  Result<double> value(std::uint64_t metric);

 private:
  friend class CustomMetricRegistry;
  struct Family;
  struct Metric;
  CustomMetricOwner(CustomMetricRegistry& registry, CustomMetricLimits limits);
  Result<std::shared_ptr<Metric>> find(std::uint64_t metric);

  CustomMetricRegistry& registry_;
  CustomMetricLimits limits_;
  // By handle; guarded by registry_.mutex_. A metric handle counts its uses (metric() calls
  // less release() calls); a released one is empty, for the next metric to take.
  struct Held {
    std::shared_ptr<Metric> metric;
    std::size_t uses = 0;
  };
  std::vector<std::shared_ptr<Family>> families_;
  std::vector<Held> metrics_;
  std::size_t live_metrics_ = 0;
};

/// The process's custom metrics. Thread-safe.
class SONIC_EXPORT CustomMetricRegistry {
 public:
  static CustomMetricRegistry& global();

  /// A new owner; its metrics last while it does, and it must not outlive the registry.
  std::shared_ptr<CustomMetricOwner> owner(CustomMetricLimits limits = {});

  /// Every family that has a metric, in name order: "# HELP", "# TYPE", then its metrics in
  /// label order (a histogram's _count, _sum and _bucket lines, as prometheus-cpp writes them).
  std::string render() const;

 private:
  friend class CustomMetricOwner;
  mutable std::mutex mutex_;
  std::map<std::string, std::weak_ptr<CustomMetricOwner::Family>> families_;
};

/// A double as prometheus-cpp writes it: the shortest form that reads back the same, "+Inf",
/// "-Inf", "Nan".
SONIC_EXPORT std::string prometheus_number(double value);

}  // namespace sonic

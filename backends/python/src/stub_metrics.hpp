// A stub's custom metrics (pb_utils.MetricFamily, Metric): the stub asks, the server keeps the
// values (sonic/custom_metrics.hpp), so that the instances of a model count into one metric, as
// Triton's stubs count into its core's. Asked during a load step (initialize) and during an
// execute, when the server reads the stub's socket.
#pragma once

#include <nlohmann/json.hpp>

#include "sonic/custom_metrics.hpp"

namespace sonic::python_backend {

/// The answer to a stub's "metric" message (its `op` on `owner`, the model's metrics): a
/// "metric_answer" with the call's number and a handle, a value, or an error. A malformed
/// message is answered with an error too: it is the model's mistake, not a broken stub.
nlohmann::json answer_metric(CustomMetricOwner& owner, const nlohmann::json& header);

}  // namespace sonic::python_backend

// sonic-perf — what the requests of a run send, and what they must answer: the --input specs;
// or the model's own inputs, their variable dimensions from --shape and their rows from -b, as
// perf_analyzer fills them; or the steps of an --input-data file with its validation_data.
#pragma once

#include <sonic/sonic.hpp>

#include <nlohmann/json.hpp>

#include <random>
#include <string>
#include <vector>

#include "input_data.hpp"
#include "options.hpp"

namespace sonic::perf {

/// One request's inputs and, when the input data says, the outputs it must produce.
struct PlannedRequest {
  std::vector<NamedTensor> inputs;
  std::vector<NamedTensor> expected;  ///< compared byte for byte; empty: not checked
};

/// The model's tensors, and whether its first dimension is the batch (max_batch_size > 0).
struct ModelLayout {
  bool batches = false;
  std::vector<TensorMetadata> inputs, outputs;
};

/// Asks the server for the model's metadata and configuration. A server without ModelConfig
/// (not every KServe server has Triton's extension) is taken as one whose model does not batch.
inline ModelLayout model_layout(Client& client, const std::string& model) {
  ModelLayout layout;
  ModelMetadata metadata = client.model_metadata(model);
  layout.inputs = metadata.inputs;
  layout.outputs = metadata.outputs;
  try {
    auto config = nlohmann::json::parse(client.model_config(model), nullptr, false);
    layout.batches = config.is_object() && config.value("max_batch_size", 0) > 0;
  } catch (const Error&) {
    layout.batches = false;
  }
  return layout;
}

/// The shape of one request's input: the batch rows (when the model batches), then the
/// model's dimensions with the variable ones taken from `given` (--shape or the file's
/// "shape"), or inferred from `elements` when one alone is variable.
inline Shape request_shape(const ModelLayout& layout, const TensorMetadata& input,
                           const std::optional<Shape>& given, int batch_size,
                           std::optional<std::size_t> elements = std::nullopt) {
  Shape dims = input.shape;
  if (layout.batches && !dims.empty()) dims.erase(dims.begin());
  const std::string what = "input '" + input.name + "' of shape " + to_string(input.shape);
  if (given) {
    bool fits = given->size() == dims.size();
    for (std::size_t i = 0; fits && i < dims.size(); ++i) {
      fits = dims[i] < 0 || dims[i] == (*given)[i];
    }
    if (!fits) {
      throw tools::UsageError(what + ": the shape " + to_string(*given) + " given does not fit" +
                              (layout.batches ? " (give it without the batch dimension)" : ""));
    }
    dims = *given;
  }
  int variable = 0;
  std::int64_t fixed = 1;
  for (auto d : dims) d < 0 ? ++variable : fixed *= d;
  if (variable == 1 && elements && fixed > 0 && *elements % static_cast<std::size_t>(fixed) == 0) {
    for (auto& d : dims) {
      if (d < 0) d = static_cast<std::int64_t>(*elements / static_cast<std::size_t>(fixed));
    }
  } else if (variable > 0) {
    throw tools::UsageError(what + " has variable dimensions: give them with --shape " +
                            input.name + ":DIMS" +
                            (layout.batches ? " (batch dimension excluded)" : ""));
  }
  if (layout.batches) {
    dims.insert(dims.begin(), batch_size);
  } else if (batch_size > 1) {
    throw tools::UsageError("-b " + std::to_string(batch_size) +
                            ": the model does not batch (its max_batch_size is 0)");
  }
  return dims;
}

namespace request_plan_detail {

// A file's tensor repeated over the batch rows, as one owned tensor of `shape`.
inline Tensor batched(const StepTensor& row, const Shape& shape, int rows) {
  std::vector<std::uint8_t> bytes;
  bytes.reserve(row.bytes.size() * static_cast<std::size_t>(rows));
  for (int i = 0; i < rows; ++i) bytes.insert(bytes.end(), row.bytes.begin(), row.bytes.end());
  return tools::owned_tensor(row.dtype, shape, std::move(bytes));
}

inline DatatypeOf datatypes(const std::vector<TensorMetadata>& tensors) {
  DatatypeOf types;
  for (const auto& t : tensors) types[t.name] = t.dtype;
  return types;
}

}  // namespace request_plan_detail

/// The requests a run cycles through (one, unless --input-data has several steps).
inline std::vector<PlannedRequest> plan_requests(Client& client, const Options& o) {
  using namespace request_plan_detail;
  std::mt19937 random(7);
  if (!o.inputs.empty()) {
    PlannedRequest request;
    for (const auto& spec : o.inputs)
      request.inputs.push_back({spec.name, make_tensor(spec, random), {}});
    return {request};
  }
  const ModelLayout layout = model_layout(client, o.model);
  auto given_shape = [&](const std::string& name) -> std::optional<Shape> {
    auto found = o.shapes.find(name);
    if (found == o.shapes.end()) return std::nullopt;
    return found->second;
  };
  for (const auto& given : o.shapes) {
    bool known = std::any_of(layout.inputs.begin(), layout.inputs.end(),
                             [&](const TensorMetadata& t) { return t.name == given.first; });
    if (!known) throw tools::UsageError("--shape " + given.first + ": the model has no such input");
  }
  if (o.input_data.empty()) {
    PlannedRequest request;
    for (const auto& input : layout.inputs) {
      InputSpec spec;
      spec.name = input.name;
      spec.dtype = input.dtype;
      spec.shape = request_shape(layout, input, given_shape(input.name), o.batch_size);
      request.inputs.push_back({spec.name, make_tensor(spec, random), {}});
    }
    return {request};
  }
  std::vector<PlannedRequest> plan;
  const int rows = layout.batches ? o.batch_size : 1;  // each step's values are one row
  auto steps = read_input_data(o.input_data, datatypes(layout.inputs), datatypes(layout.outputs));
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const std::string where = "--input-data " + o.input_data + " step " + std::to_string(i);
    PlannedRequest request;
    for (const auto& input : layout.inputs) {
      auto row = std::find_if(steps[i].inputs.begin(), steps[i].inputs.end(),
                              [&](const StepTensor& t) { return t.name == input.name; });
      if (row == steps[i].inputs.end()) {
        throw tools::UsageError(where + ": no values for input '" + input.name + "'");
      }
      auto given = row->shape ? row->shape : given_shape(input.name);
      Shape shape = request_shape(layout, input, given, o.batch_size, row->elements);
      std::size_t per_row = element_count(shape).value_or(0) / static_cast<std::size_t>(rows);
      if (per_row != row->elements) {
        throw tools::UsageError(where + " input '" + input.name + "': " +
                                std::to_string(row->elements) + " values for a row of shape " +
                                to_string(shape) + ", which holds " + std::to_string(per_row));
      }
      request.inputs.push_back({input.name, batched(*row, shape, rows), {}});
    }
    for (const auto& out : steps[i].expected) {
      Shape shape{static_cast<std::int64_t>(out.elements) * rows};
      request.expected.push_back({out.name, batched(out, shape, rows), {}});
    }
    plan.push_back(std::move(request));
  }
  return plan;
}

/// Why a result does not match what the plan expects of it, or empty when it does.
inline std::string mismatch(const PlannedRequest& plan, const InferResult& result) {
  for (const auto& expected : plan.expected) {
    const NamedTensor* out = result.find_output(expected.name);
    if (!out) return "output '" + expected.name + "' is missing from the answer";
    const Tensor& got = out->tensor;
    if (got.dtype() != expected.tensor.dtype()) {
      return "output '" + expected.name + "' is " + to_string(got.dtype()) + ", not " +
             to_string(expected.tensor.dtype());
    }
    if (got.byte_size() != expected.tensor.byte_size()) {
      return "output '" + expected.name + "' has " + std::to_string(got.byte_size()) +
             " bytes where validation_data has " + std::to_string(expected.tensor.byte_size());
    }
    const std::uint8_t* a = got.data();
    const std::uint8_t* b = expected.tensor.data();
    auto differs = std::mismatch(a, a + got.byte_size(), b);
    if (differs.first != a + got.byte_size()) {
      std::string where;
      if (got.dtype() != DataType::Bytes) {
        where = " at element " + std::to_string(static_cast<std::size_t>(differs.first - a) /
                                                element_size(got.dtype()));
      }
      return "output '" + expected.name + "' differs from validation_data" + where;
    }
  }
  return {};
}

}  // namespace sonic::perf

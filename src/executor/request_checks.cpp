// sonic — the checks before anything runs: a model's functions, a request against its model.
#include "executor/request_checks.hpp"

#include <string>
#include <vector>

#include "client/batch_rows.hpp"
#include "executor/classification.hpp"
#include "sonic/validate.hpp"

namespace sonic::detail {

namespace {

// Triton's words for a request without all the required inputs (its core's request
// validation): "expected 3 inputs but got 1 inputs for model 'm'. Got input(s) ['INPUT0'],
// but missing required input(s) ['INPUT1','INPUT2']. Please provide all required input(s).",
// with "expected number of inputs between 3 and 4" when the model has optional inputs.
Error missing_inputs(const Model& model, const InferRequest& request,
                     const std::vector<std::string>& missing) {
  auto quoted = [](const auto& names) {
    std::string list;
    for (const auto& name : names) list += (list.empty() ? "'" : ",'") + name + "'";
    return "[" + list + "]";
  };
  std::vector<std::string> given;
  for (const auto& input : request.inputs()) given.push_back(input.name);
  const std::size_t all = model.inputs.size();
  const std::size_t required = all - model.optional_inputs.size();
  std::string expected = required == all
                             ? "expected " + std::to_string(all) + " inputs"
                             : "expected number of inputs between " + std::to_string(required) +
                                   " and " + std::to_string(all);
  return Error(StatusCode::InvalidArgument,
               expected + " but got " + std::to_string(given.size()) + " inputs for model '" +
                   model.name + "'. Got input(s) " + quoted(given) +
                   ", but missing required input(s) " + quoted(missing) +
                   ". Please provide all required input(s).");
}

}  // namespace

Result<void> check_functions(const Model& model) {
  if (static_cast<bool>(model.compute) == model.is_decoupled()) {
    return Error(StatusCode::InvalidArgument,
                 "model '" + model.name + "' needs one function: compute or decoupled");
  }
  if (model.sequence_batching && (!model.compute || model.dynamic_batching)) {
    return Error(StatusCode::InvalidArgument,
                 "model '" + model.name +
                     "': sequence_batching needs a compute function and no dynamic_batching");
  }
  return {};
}

Result<void> check_against_model(const Model& model, const ModelMetadata& metadata,
                                 const InferRequest& request) {
  // A batching model takes at most max_batch_size rows in one request, batched by the server
  // or not; Triton's core (InferenceRequest::Normalize) checks this before each input's dims,
  // so [3,224,224] for a model of max_batch_size 1 is refused for its batch of 3.
  if (model.max_batch_size > 0) {
    if (auto batch = batch_of(request)) {
      if (auto ok = check_batch_size(model, *batch); !ok) return ok.error();
    }
  }
  if (auto ok = validate_request(metadata, request); !ok) return ok.error();
  for (const auto& wanted : request.outputs()) {
    if (auto k = requested_class_count(wanted); !k) return k.error();
  }
  std::vector<std::string> missing;
  for (const auto& spec : model.inputs) {
    if (!request.find_input(spec.name) && !model.is_optional_input(spec.name)) {
      missing.push_back(spec.name);
    }
  }
  if (!missing.empty()) return missing_inputs(model, request, missing);
  return {};
}

Result<void> check_batch_size(const Model& model, std::int64_t batch) {
  if (batch <= model.max_batch_size) return {};
  // Triton's words for the same refusal.
  return Error(StatusCode::InvalidArgument,
               "inference request batch-size must be <= " + std::to_string(model.max_batch_size) +
                   " for '" + model.name + "'");
}

}  // namespace sonic::detail

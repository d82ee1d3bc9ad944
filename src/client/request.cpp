// sonic — the requests' builders and the results' lookups that are not worth inlining.
#include "sonic/request.hpp"

#include <utility>

namespace sonic {

InferRequest& InferRequest::input(std::string name, Tensor tensor, Parameters parameters) & {
  inputs_.push_back({std::move(name), std::move(tensor), std::move(parameters)});
  return *this;
}

InferRequest& InferRequest::output(std::string name, Parameters parameters) & {
  outputs_.push_back({std::move(name), std::move(parameters)});
  return *this;
}

InferRequest& InferRequest::parameter(std::string name, Parameter value) & {
  parameters_[std::move(name)] = std::move(value);
  return *this;
}

InferRequest& InferRequest::priority(std::uint64_t level) & {
  parameters_["priority"] = level;
  return *this;
}

InferRequest& InferRequest::server_timeout(std::chrono::microseconds limit) & {
  parameters_["timeout"] = static_cast<std::int64_t>(limit.count());
  return *this;
}

InferRequest& InferRequest::own_inputs() & {
  for (auto& in : inputs_) {
    if (in.tensor.borrowed()) in.tensor = in.tensor.to_owned();
  }
  return *this;
}

InferRequest& InferRequest::header(std::string name, std::string value) & {
  headers_.emplace_back(std::move(name), std::move(value));
  return *this;
}

InferRequest InferRequest::with_inputs(std::vector<NamedTensor> inputs) const {
  InferRequest copy(model_, version_);
  copy.id_ = id_;
  copy.inputs_ = std::move(inputs);
  copy.outputs_ = outputs_;
  copy.parameters_ = parameters_;
  copy.timeout_ = timeout_;
  copy.compression_ = compression_;
  copy.headers_ = headers_;
  return copy;
}

InferRequest& InferRequest::sequence_flags(Parameter id, bool start, bool end) {
  parameters_["sequence_id"] = std::move(id);
  parameters_["sequence_start"] = start;
  parameters_["sequence_end"] = end;
  return *this;
}

void InferResult::set_parameter(std::string name, Parameter value) {
  parameters_[std::move(name)] = std::move(value);
}

const Tensor& InferResult::output(std::string_view name) const {
  if (const NamedTensor* out = find_output(name)) return out->tensor;
  std::string present;
  for (const auto& out : outputs_) present += (present.empty() ? "" : ", ") + out.name;
  throw Error(StatusCode::NotFound, "result of model '" + model_ + "' has no output '" +
                                        std::string(name) + "' (outputs: " + present + ")");
}

}  // namespace sonic

#include "reshape.hpp"

#include <memory>

namespace sonic::repository {

namespace {

// `target` (after the batch dimension, if any) for a tensor of `elements` elements: one -1
// takes what is left. None when the elements do not fit.
std::optional<Shape> resolve(const std::vector<std::int64_t>& target, std::int64_t batch,
                             std::size_t elements) {
  Shape shape;
  if (batch >= 0) shape.push_back(batch);
  std::size_t known = batch >= 0 ? static_cast<std::size_t>(batch) : 1;
  int unknown = -1;
  for (auto d : target) {
    if (d < 0) {
      if (unknown >= 0) return std::nullopt;  // two sizes to guess
      unknown = static_cast<int>(shape.size());
      shape.push_back(1);
    } else {
      shape.push_back(d);
      known *= static_cast<std::size_t>(d);
    }
  }
  if (unknown >= 0) {
    if (known == 0 || elements % known != 0) return std::nullopt;
    shape[static_cast<std::size_t>(unknown)] = static_cast<std::int64_t>(elements / known);
  } else if (known != elements) {
    return std::nullopt;
  }
  return shape;
}

std::size_t elements_of(const Tensor& t) { return element_count(t.shape()).value_or(0); }

Error no_fit(const std::string& what, const std::string& name) {
  return Error(StatusCode::InvalidArgument,
               what + " '" + name + "' does not fit its reshape (element counts differ)");
}

}  // namespace

Reshapes take_reshapes(ModelConfig& config) {
  Reshapes reshapes;
  for (auto* list : {&config.inputs, &config.outputs}) {
    for (auto& t : *list) {
      if (!t.reshape) continue;
      auto& target = list == &config.inputs ? reshapes.inputs : reshapes.outputs;
      target[t.name] = {t.dims, *t.reshape};
      t.dims = *t.reshape;
      t.reshape.reset();
    }
  }
  return reshapes;
}

void restore_reshapes(ModelConfig& config, const Reshapes& reshapes) {
  for (auto* list : {&config.inputs, &config.outputs}) {
    const auto& source = list == &config.inputs ? reshapes.inputs : reshapes.outputs;
    for (auto& t : *list) {
      auto it = source.find(t.name);
      if (it == source.end()) continue;
      t.dims = it->second.dims;
      t.reshape = it->second.reshape;
    }
  }
}

void add_completed_reshapes(const ModelConfig& config, Reshapes& reshapes) {
  for (const auto* list : {&config.inputs, &config.outputs}) {
    auto& target = list == &config.inputs ? reshapes.inputs : reshapes.outputs;
    for (const auto& t : *list) {
      if (t.reshape && !target.count(t.name)) target[t.name] = {t.dims, *t.reshape};
    }
  }
}

ModelFunction apply_reshapes(ModelFunction compute, Reshapes reshapes, bool batched) {
  if (reshapes.empty()) return compute;
  return [compute = std::move(compute), reshapes = std::move(reshapes),
          batched](const InferRequest& request) -> Result<std::vector<NamedTensor>> {
    auto batch_of = [&](const Tensor& t) {
      return batched && !t.shape().empty() ? t.shape().front() : std::int64_t{-1};
    };
    InferRequest inner(request.model_name(), request.model_version());
    for (const auto& [key, value] : request.parameters()) inner.parameter(key, value);
    for (const auto& input : request.inputs()) {
      auto it = reshapes.inputs.find(input.name);
      if (it == reshapes.inputs.end()) {
        inner.input(input.name, input.tensor, input.parameters);
        continue;
      }
      const Tensor& t = input.tensor;
      auto shape = resolve(it->second.reshape, batch_of(t), elements_of(t));
      if (!shape) return no_fit("input", input.name);
      inner.input(input.name,
                  Tensor::view_bytes(t.dtype(), std::move(*shape), t.data(), t.byte_size()),
                  input.parameters);
    }
    auto outputs = compute(inner);
    if (!outputs) return outputs;
    for (auto& output : *outputs) {
      auto it = reshapes.outputs.find(output.name);
      if (it == reshapes.outputs.end()) continue;
      auto keep = std::make_shared<Tensor>(output.tensor);
      auto shape = resolve(it->second.dims, batch_of(*keep), elements_of(*keep));
      if (!shape) return no_fit("output", output.name);
      const void* data = keep->data();
      const std::size_t bytes = keep->byte_size();
      const DataType type = keep->dtype();
      output.tensor = Tensor::from_shared(type, std::move(*shape), std::move(keep), data, bytes);
    }
    return outputs;
  };
}

}  // namespace sonic::repository

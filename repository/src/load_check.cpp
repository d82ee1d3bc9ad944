#include <cstring>
#include <vector>

#include "sonic/repository/backend.hpp"

namespace sonic::repository {

InferRequest ones_request(const ModelConfig& config, std::int64_t batch) {
  InferRequest request(config.name);
  for (const auto& input : config.inputs) {
    Shape shape;
    if (batch >= 0) shape.push_back(batch);
    for (auto d : input.dims) shape.push_back(d < 0 ? 1 : d);
    const std::size_t count = element_count(shape).value_or(0);
    const DataType type = input.data_type.value_or(DataType::Fp32);
    const std::size_t size = element_size(type);
    std::vector<std::uint8_t> bytes(count * size);
    // One, in the element's own representation (for half-precision types: float's upper bits).
    const float one = 1.0f;
    std::uint8_t element[8] = {};
    switch (type) {
      case DataType::Fp32: std::memcpy(element, &one, 4); break;
      case DataType::Fp64: {
        const double one_double = 1.0;
        std::memcpy(element, &one_double, 8);
        break;
      }
      case DataType::Fp16: element[1] = 0x3c; break;  // 0x3c00
      case DataType::Bf16:
        element[1] = 0x3f;
        element[0] = 0x80;
        break;                         // 0x3f80
      default: element[0] = 1; break;  // integers and bool, little-endian
    }
    for (std::size_t i = 0; i < count; ++i) std::memcpy(bytes.data() + i * size, element, size);
    request.input(input.name,
                  Tensor::copy_bytes(type, std::move(shape), bytes.data(), bytes.size()));
  }
  return request;
}

Result<LoadedModel> checked_at_load(ModelConfig config, ModelFunction compute,
                                    const std::string& hint_at_max_batch) {
  // A variable dimension beyond the batch (a particle count) has no size to try that every
  // model takes: ones at 1 would fail a kNN over more neighbours than that. Such a model is
  // checked by its first request.
  for (const auto& input : config.inputs) {
    for (auto d : input.dims) {
      if (d < 0) return LoadedModel{std::move(config), std::move(compute), {}, {}};
    }
  }
  const std::int64_t max_batch = config.max_batch_size;
  std::vector<std::int64_t> batches{max_batch > 0 ? 1 : -1};
  if (max_batch > 1) batches.push_back(max_batch);
  for (std::int64_t batch : batches) {
    auto ran = compute(ones_request(config, batch));
    if (!ran) {
      const bool at_max = batch == max_batch && max_batch > 1;
      return Error(StatusCode::InvalidArgument,
                   "the model fails at batch " + std::to_string(batch < 0 ? 1 : batch) + ": " +
                       ran.error().message() +
                       (at_max && !hint_at_max_batch.empty() ? " " + hint_at_max_batch : ""));
    }
  }
  return LoadedModel{std::move(config), std::move(compute), {}, {}};
}

}  // namespace sonic::repository

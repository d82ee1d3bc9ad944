#include "model_config.hpp"

#include <vector>

#include "protocol/config_types.hpp"
#include "protocol/proto_writer.hpp"

namespace sonic::server {

namespace {

using protocol::MessageWriter;

// A ModelInput or ModelOutput (`tensor` writes one of them): with batching, Triton's dims leave
// out the batch dimension.
MessageWriter tensor_config(MessageWriter tensor, const TensorMetadata& t, bool batched) {
  const auto first = t.shape.begin() + (batched && !t.shape.empty() ? 1 : 0);
  tensor.string("name", t.name)
      .number("data_type", static_cast<std::int64_t>(protocol::config_data_type(t.dtype)))
      .packed("dims", std::vector<std::int64_t>(first, t.shape.end()));
  return tensor;
}

}  // namespace

std::string model_config_of(const Model& model) {
  if (!model.config.empty()) return model.config;
  const bool batched = model.max_batch_size > 0;
  MessageWriter config("inference.ModelConfig");
  config.string("name", model.name).string("platform", model.platform);
  if (batched) config.number("max_batch_size", model.max_batch_size);
  for (const auto& t : model.inputs) {
    config.message("input", tensor_config(config.of("input"), t, batched));
  }
  for (const auto& t : model.outputs) {
    config.message("output", tensor_config(config.of("output"), t, batched));
  }
  config.message("instance_group",
                 config.of("instance_group").number("count", 1).enumerator("kind", "KIND_CPU"));
  config.string("backend", "sonic");
  if (model.is_decoupled()) {
    config.message("model_transaction_policy",
                   config.of("model_transaction_policy").number("decoupled", 1));
  }
  return config.bytes();
}

}  // namespace sonic::server

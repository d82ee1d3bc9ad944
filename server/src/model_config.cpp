#include "model_config.hpp"

#include "protocol/config_types.hpp"
#include "protocol/wire.hpp"

namespace sonic::server {

namespace {

namespace wire = protocol::wire;

// ModelInput { name = 1; data_type = 2; dims = 4 } and ModelOutput { name = 1; data_type = 2;
// dims = 3 }: only the dims field number differs.
std::string tensor_config(const TensorMetadata& t, std::uint32_t dims_field, bool batched) {
  std::string msg;
  wire::put_string_field(msg, 1, t.name);
  wire::put_varint_field(msg, 2, protocol::config_data_type(t.dtype));
  std::string dims;
  for (std::size_t d = batched ? 1 : 0; d < t.shape.size(); ++d) {
    wire::put_varint(dims, static_cast<std::uint64_t>(t.shape[d]));
  }
  if (!dims.empty()) wire::put_len_field(msg, dims_field, dims);
  return msg;
}

}  // namespace

std::string model_config_of(const Model& model) {
  if (!model.config.empty()) return model.config;
  const bool batched = model.max_batch_size > 0;
  std::string config;
  wire::put_string_field(config, 1, model.name);
  wire::put_string_field(config, 2, model.platform);
  if (batched) wire::put_varint_field(config, 4, static_cast<std::uint64_t>(model.max_batch_size));
  for (const auto& t : model.inputs) wire::put_len_field(config, 5, tensor_config(t, 4, batched));
  for (const auto& t : model.outputs) wire::put_len_field(config, 6, tensor_config(t, 3, batched));
  std::string group;  // ModelInstanceGroup { count = 2; kind = 4 (KIND_CPU = 2) }
  wire::put_varint_field(group, 2, 1);
  wire::put_varint_field(group, 4, 2);
  wire::put_len_field(config, 7, group);
  wire::put_string_field(config, 17, "sonic");  // backend
  if (model.is_decoupled()) {
    std::string policy;  // ModelTransactionPolicy { decoupled = 1 }
    wire::put_varint_field(policy, 1, 1);
    wire::put_len_field(config, 19, policy);
  }
  return config;
}

}  // namespace sonic::server

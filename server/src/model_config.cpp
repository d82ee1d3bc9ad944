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

MessageWriter dynamic_batching_config(MessageWriter batching, const DynamicBatching& b) {
  batching.packed("preferred_batch_size", b.preferred_batch_sizes)
      .number("max_queue_delay_microseconds", b.max_queue_delay.count())
      .number("priority_levels", static_cast<std::int64_t>(b.priority_levels))
      .number("default_priority_level", static_cast<std::int64_t>(b.default_priority_level));
  return batching;
}

const char* control_kind(SequenceControl::Kind kind) {
  switch (kind) {
    case SequenceControl::Kind::Start: return "CONTROL_SEQUENCE_START";
    case SequenceControl::Kind::Ready: return "CONTROL_SEQUENCE_READY";
    case SequenceControl::Kind::End: return "CONTROL_SEQUENCE_END";
    case SequenceControl::Kind::CorrelationId: break;
  }
  return "CONTROL_SEQUENCE_CORRID";
}

// One ControlInput: a flag's false and true values in the field of its type (Triton's
// int32_false_true, fp32_false_true, bool_false_true), or the correlation id's data_type.
MessageWriter control_input(MessageWriter input, const SequenceControl& c) {
  MessageWriter control = input.of("control");
  control.enumerator("kind", control_kind(c.kind));
  if (c.kind == SequenceControl::Kind::CorrelationId) {
    control.number("data_type", static_cast<std::int64_t>(protocol::config_data_type(c.type)));
  } else if (c.type == DataType::Fp32) {
    control.packed_floats("fp32_false_true",
                          {static_cast<float>(c.false_value), static_cast<float>(c.true_value)});
  } else if (c.type == DataType::Bool) {
    control.packed("bool_false_true",
                   std::vector<std::int64_t>{c.false_value != 0, c.true_value != 0});
  } else {
    control.packed("int32_false_true",
                   std::vector<std::int64_t>{static_cast<std::int64_t>(c.false_value),
                                             static_cast<std::int64_t>(c.true_value)});
  }
  input.string("name", c.input).message("control", control);
  return input;
}

MessageWriter sequence_batching_config(MessageWriter batching, const SequenceBatching& s) {
  batching.number("max_sequence_idle_microseconds", s.limits.idle.count());
  for (const auto& c : s.controls) {
    batching.message("control_input", control_input(batching.of("control_input"), c));
  }
  for (const auto& state : s.states) {
    batching.message(
        "state",
        batching.of("state")
            .string("input_name", state.input)
            .string("output_name", state.output)
            .number("data_type", static_cast<std::int64_t>(protocol::config_data_type(state.type)))
            .packed("dims", state.dims));
  }
  return batching;
}

}  // namespace

std::string model_config_of(const Model& model) {
  if (!model.config.empty()) return model.config;
  const bool batched = model.max_batch_size > 0;
  // Fields in field-number order, as protobuf writes them.
  MessageWriter config("inference.ModelConfig");
  config.string("name", model.name).string("platform", model.platform);
  if (batched) config.number("max_batch_size", model.max_batch_size);
  for (const auto& t : model.inputs) {
    config.message("input", tensor_config(config.of("input"), t, batched));
  }
  for (const auto& t : model.outputs) {
    config.message("output", tensor_config(config.of("output"), t, batched));
  }
  config.message(
      "instance_group",
      config.of("instance_group").number("count", model.instances).enumerator("kind", "KIND_CPU"));
  if (model.dynamic_batching) {
    config.message("dynamic_batching",
                   dynamic_batching_config(config.of("dynamic_batching"), *model.dynamic_batching));
  }
  if (model.sequence_batching) {
    config.message("sequence_batching", sequence_batching_config(config.of("sequence_batching"),
                                                                 *model.sequence_batching));
  }
  config.string("backend", "sonic");
  if (model.is_decoupled()) {
    config.message("model_transaction_policy",
                   config.of("model_transaction_policy").number("decoupled", 1));
  }
  return config.bytes();
}

}  // namespace sonic::server

#include "sequence_tensors.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "protocol/invalid.hpp"

namespace sonic::repository {

namespace {

using protocol::invalid;

DataType flag_type(const SequenceControlConfig& control) {
  if (!control.fp32_false_true.empty()) return DataType::Fp32;
  if (!control.bool_false_true.empty()) return DataType::Bool;
  return DataType::Int32;
}

}  // namespace

bool SequenceTensors::has(const std::string& name) const {
  auto named = [&](const TensorConfig& t) { return t.name == name; };
  return std::any_of(inputs.begin(), inputs.end(), named) ||
         std::any_of(outputs.begin(), outputs.end(), named);
}

SequenceTensors sequence_tensors(const SequenceBatchingConfig& config) {
  SequenceTensors tensors;
  for (const auto& control : config.controls) {
    TensorConfig t;
    t.name = control.input;
    t.data_type = control.kind == SequenceControlConfig::Kind::CorrelationId ? control.data_type
                                                                             : flag_type(control);
    t.dims = {1};  // Triton's control tensors: one value (after the batch dimension)
    tensors.inputs.push_back(std::move(t));
  }
  for (const auto& state : config.states) {
    TensorConfig t;
    t.data_type = state.data_type;
    t.dims = state.dims;
    t.name = state.input_name;
    tensors.inputs.push_back(t);
    t.name = state.output_name;
    tensors.outputs.push_back(std::move(t));
  }
  return tensors;
}

Result<void> check_not_listed(const ModelConfig& config, const SequenceTensors& tensors,
                              const std::string& origin) {
  for (const auto* list : {&config.inputs, &config.outputs}) {
    for (const auto& t : *list) {
      if (tensors.has(t.name)) {
        return invalid(origin + ": '" + t.name +
                       "' is a control or state tensor of sequence_batching: the sequence "
                       "batcher gives and takes it, so the config does not list it as an input "
                       "or output");
      }
    }
  }
  return {};
}

void remove_sequence_tensors(ModelConfig& config, const SequenceTensors& tensors) {
  for (auto* list : {&config.inputs, &config.outputs}) {
    list->erase(std::remove_if(list->begin(), list->end(),
                               [&](const TensorConfig& t) { return tensors.has(t.name); }),
                list->end());
  }
}

Result<SequenceBatching> executor_sequence_batching(const SequenceBatchingConfig& config,
                                                    const std::string& model_directory) {
  SequenceBatching batching;
  if (config.max_sequence_idle_microseconds > 0) {
    // Past what the clock holds, no sequence is ever idle: a year is as good.
    batching.limits.idle = std::chrono::microseconds(
        std::min<std::uint64_t>(config.max_sequence_idle_microseconds, 365ull * 86400 * 1000000));
  }
  for (const auto& control : config.controls) {
    SequenceControl c;
    c.input = control.input;
    c.kind = static_cast<SequenceControl::Kind>(control.kind);
    if (control.kind == SequenceControlConfig::Kind::CorrelationId) {
      c.type = *control.data_type;
    } else {
      c.type = flag_type(control);
      if (!control.int32_false_true.empty()) {
        c.false_value = control.int32_false_true[0];
        c.true_value = control.int32_false_true[1];
      } else if (!control.fp32_false_true.empty()) {
        c.false_value = control.fp32_false_true[0];
        c.true_value = control.fp32_false_true[1];
      } else {
        c.false_value = control.bool_false_true[0];
        c.true_value = control.bool_false_true[1];
      }
    }
    batching.controls.push_back(std::move(c));
  }
  for (const auto& state : config.states) {
    SequenceState s;
    s.input = state.input_name;
    s.output = state.output_name;
    s.type = *state.data_type;
    s.dims = Shape(state.dims.begin(), state.dims.end());
    s.initial_dims = Shape(state.initial_dims.begin(), state.initial_dims.end());
    if (!state.initial_data_file.empty()) {
      const auto file =
          std::filesystem::path(model_directory) / "initial_state" / state.initial_data_file;
      Shape shape = s.initial_dims.empty() ? s.dims : s.initial_dims;
      for (auto& d : shape) d = d < 0 ? 1 : d;
      const std::size_t expected = element_count(shape).value_or(0) * element_size(s.type);
      std::error_code error;
      const auto size = std::filesystem::file_size(file, error);
      if (error || size != expected) {
        return invalid(
            file.string() + ": the initial state of '" + s.input + "' needs " +
            std::to_string(expected) + " bytes" +
            (error ? " and the file cannot be read" : ", the file has " + std::to_string(size)));
      }
      s.initial.resize(expected);
      std::ifstream in(file, std::ios::binary);
      if (!in.read(reinterpret_cast<char*>(s.initial.data()),
                   static_cast<std::streamsize>(expected))) {
        return invalid(file.string() + " cannot be read");
      }
    }
    batching.states.push_back(std::move(s));
  }
  return batching;
}

}  // namespace sonic::repository

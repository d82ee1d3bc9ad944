// A stateful model's sequence_batching as the executor takes it: the control and state tensors
// the sequence batcher gives the model and takes from it (which clients neither send nor get),
// and the executor's SequenceBatching, initial states read from the model's directory.
#pragma once

#include <string>
#include <vector>

#include "sonic/executor.hpp"
#include "sonic/repository/model_config.hpp"

namespace sonic::repository {

/// The tensors the batcher gives (control and state inputs) and takes (state outputs), typed and
/// shaped as the model sees them (dims without the batch dimension).
struct SequenceTensors {
  std::vector<TensorConfig> inputs;
  std::vector<TensorConfig> outputs;

  bool has(const std::string& name) const;
};

SequenceTensors sequence_tensors(const SequenceBatchingConfig& config);

/// INVALID_ARGUMENT when one of `tensors` is also an input or output of `config`: the batcher
/// supplies it, a client cannot.
Result<void> check_not_listed(const ModelConfig& config, const SequenceTensors& tensors,
                              const std::string& origin);

/// Removes the batcher's tensors from a config the backend completed, leaving what clients see.
void remove_sequence_tensors(ModelConfig& config, const SequenceTensors& tensors);

/// The executor's form of a (checked) config; initial states given by data_file are read from
/// `model_directory`/initial_state/ and must have the size their dims say.
Result<SequenceBatching> executor_sequence_batching(const SequenceBatchingConfig& config,
                                                    const std::string& model_directory);

}  // namespace sonic::repository

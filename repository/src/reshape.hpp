// Triton's reshape: a tensor's shape as clients send and receive it (dims) and as the model takes
// or gives it (reshape) may differ, with the same elements. The backend sees the model's shapes;
// clients see the config's; the bytes are shared, not copied.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sonic/executor.hpp"
#include "sonic/repository/model_config.hpp"

namespace sonic::repository {

/// The reshaped tensors of a config: by name, the dims clients use and the reshape of the model.
struct Reshapes {
  struct Shapes {
    std::vector<std::int64_t> dims, reshape;
  };
  std::map<std::string, Shapes> inputs, outputs;

  bool empty() const { return inputs.empty() && outputs.empty(); }
};

/// Takes the reshapes out of `config`, leaving each reshaped tensor with the model's shape as
/// its dims: the config a backend loads and checks against the model file.
Reshapes take_reshapes(ModelConfig& config);

/// Puts the clients' dims (and the reshapes, for reporting) back into the config a backend
/// completed.
void restore_reshapes(ModelConfig& config, const Reshapes& reshapes);

/// Adds the reshapes a backend completed (tensors the config did not list, given dims [1] and an
/// empty reshape for a model shape of no dims beyond the batch, as Triton completes them).
void add_completed_reshapes(const ModelConfig& config, Reshapes& reshapes);

/// `compute` wrapped so that reshaped inputs reach it in the model's shape and reshaped outputs
/// leave it in the clients' (a batch dimension first when `batched`). A -1 in a shape takes the
/// size that keeps the element count.
ModelFunction apply_reshapes(ModelFunction compute, Reshapes reshapes, bool batched);

}  // namespace sonic::repository

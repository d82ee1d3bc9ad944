// The ModelConfig (proto/model_config.proto) a server reports for a model of its executor.
#pragma once

#include <string>

#include "sonic/executor.hpp"

namespace sonic::server {

/// The serialized ModelConfig describing an executor model: its repository's config, or one
/// derived from its name, platform, batching, and tensors (with batching, Triton's dims leave
/// out the batch dimension that metadata shows).
std::string model_config_of(const Model& model);

}  // namespace sonic::server

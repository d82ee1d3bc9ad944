// What tritonserver fills in and settles in a model's configuration before it loads the model
// (core src/model_config_utils.cc: AutoCompleteBackendFields, NormalizeModelConfig,
// NormalizeInstanceGroup), so that a config.pbtxt means here what it means to Triton, and the
// ModelConfig call answers what Triton's answers.
#pragma once

#include <string>

#include "sonic/error.hpp"
#include "sonic/repository/model_config.hpp"

namespace sonic::repository {

/// Completes `config`, read from `model_directory`, as Triton completes it on a host without
/// GPUs: the backend from the platform and the platform from the backend, both from the model
/// file when neither is given; the default model file name; one instance group when none is
/// given, and each group's name, kind and count; dynamic batching's preferred batch size; the
/// sequence idle time. INVALID_ARGUMENT, in Triton's words, for what Triton refuses there: a
/// platform and backend that disagree, an unknown platform, a model whose backend cannot be
/// told, KIND_GPU.
Result<void> apply_triton_defaults(ModelConfig& config, const std::string& model_directory);

}  // namespace sonic::repository

// sonic — ensembles (platform "ensemble"): a pipeline of the executor's own models, run as
// Triton's ensemble scheduler runs one (core src/ensemble_scheduler/): each step when the
// tensors it takes are there, independent steps at the same time, only the steps the request's
// outputs need, and a decoupled step's every response carried on through the steps after it.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "sonic/error.hpp"
#include "sonic/model.hpp"
#include "sonic/repository/model_config.hpp"

namespace sonic::repository {

/// The config of a model by name, for the checks that read other models' configs.
using ConfigLookup = std::function<Result<ModelConfig>(const std::string& name)>;

/// INVALID_ARGUMENT when the ensemble `config` reaches itself through its steps' ensembles
/// (their configs read with `config_of`): loading it would wait on its own load. Triton refuses
/// such a repository too.
Result<void> check_no_ensemble_cycle(const ModelConfig& config, const ConfigLookup& config_of);

/// The ensemble `config` describes, version `version`, its steps run by `host` (each step's
/// model is loaded through it first). INVALID_ARGUMENT, in Triton's words, for steps that do
/// not fit their models (an input mapped to no tensor, a tensor no step gives, types that
/// differ, a larger batch than a step's model takes); a step model's own load error, named,
/// when it cannot load; INVALID_ARGUMENT without a host: an ensemble runs in an executor.
Result<Model> load_ensemble(const ModelConfig& config, const std::string& version,
                            const std::shared_ptr<ModelHost>& host);

}  // namespace sonic::repository

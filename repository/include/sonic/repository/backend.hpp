// sonic — the backends that turn a model file into a function the executor runs. A backend is
// a library (sonic::onnx, sonic::torch) that registers itself when linked; a program may also
// register its own.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sonic/detail/export.hpp"
#include "sonic/error.hpp"
#include "sonic/executor.hpp"
#include "sonic/repository/model_config.hpp"

namespace sonic::repository {

/// A model version ready to run.
struct LoadedModel {
  /// The config completed from the model file: every input and output with its type and dims.
  ModelConfig config;
  /// Computes a request whose inputs match `config` (a batch dimension first when
  /// max_batch_size > 0). Runs on several threads at once.
  ModelFunction compute;
  /// For a decoupled model (config.decoupled): computes a request's responses, any number of
  /// them; `compute` then answers what a caller that cannot take a stream gets.
  DecoupledFunction decoupled;
  /// Optional: the batches dynamic_batching forms, as their requests (Model::compute_batch).
  BatchFunction compute_batch;
};

/// Where the model a backend loads lives, and what it may use besides its file.
struct LoadContext {
  std::string model_name;
  std::string version;          ///< its version directory's name
  std::string model_directory;  ///< <root>/<model>
  /// The executor that loads the model, through which the model may run that executor's other
  /// models (Triton's BLS); null when it is loaded outside an executor (Repository::load()).
  std::shared_ptr<ModelHost> host;
};

/// How a backend loads `model_file` under `config`, which may leave out what the file tells
/// (inputs, outputs, their types and dims): the backend completes it, checks that the two
/// agree, and refuses a model it would compute wrongly. Thread-safe.
using LoadFunction = std::function<Result<LoadedModel>(
    const ModelConfig& config, const std::string& model_file, const LoadContext& context)>;

/// What a backend registers.
struct Backend {
  std::string name;                    ///< Triton's backend name: "onnxruntime"
  std::vector<std::string> platforms;  ///< Triton platforms it serves: "onnxruntime_onnx"
  std::string default_model_filename;  ///< in each version directory: "model.onnx"
  LoadFunction load;
};

/// A request of ones for every input of `config` (-1 dimensions as 1), with a batch dimension
/// of `batch` first, or none when `batch` is negative; each tensor owns its bytes.
SONIC_EXPORT InferRequest ones_request(const ModelConfig& config, std::int64_t batch);

/// How a backend finishes loading a model: `compute` runs on ones at batch 1 and at
/// max_batch_size (once, without a batch dimension, for a model that does not batch) and must
/// give what the config promises (skipped when an input has a variable dimension besides the
/// batch: no one size suits every such model); then the two are the loaded model. INVALID_ARGUMENT
/// "the model fails at batch N: ..." otherwise, followed at the max batch by `hint_at_max_batch`
/// (why a model may work at 1 only).
SONIC_EXPORT Result<LoadedModel> checked_at_load(ModelConfig config, ModelFunction compute,
                                                 const std::string& hint_at_max_batch = {});

/// Adds a backend (replacing one of the same name). Thread-safe.
SONIC_EXPORT void register_backend(Backend backend);

/// The backend a config names: its `backend`, else its `platform`, else (neither given, as
/// Triton completes a config) the backend whose default file is in `version_directory`.
/// NOT_FOUND names the backends this program has and the library to link for the one asked.
SONIC_EXPORT Result<Backend> find_backend(const ModelConfig& config,
                                          const std::string& version_directory = {});

/// The names of the registered backends, sorted.
SONIC_EXPORT std::vector<std::string> backend_names();

}  // namespace sonic::repository

// What a model's config.pbtxt means to the ONNX backend: the config completed from the graph as
// Triton's onnxruntime backend completes it, and the session settings its parameters and
// optimization policy ask for.
#pragma once

#include "ort_session.hpp"
#include "sonic/repository/model_config.hpp"

namespace sonic::onnx {

/// The config with what it leaves out taken from the graph (`session`'s inputs and outputs),
/// or INVALID_ARGUMENT naming the first way the two disagree. As Triton does: tensors the config
/// leaves out come from the graph; with no config at all, a graph whose every input and output
/// has a symbolic first dimension batches, up to 4 (Triton's default-max-batch-size), through
/// the dynamic batcher when no batcher is configured (as Triton's backend adds one). Outputs
/// that are not tensors (a sequence of maps, as scikit-learn's ZipMap gives) are left out of a
/// completed config, and refused when the config names them.
Result<repository::ModelConfig> complete(repository::ModelConfig config,
                                         const ort::Session& session);

/// The session settings of `config`: Triton's onnxruntime parameters (intra_op_thread_count,
/// inter_op_thread_count, execution_mode, enable_mem_arena, enable_mem_pattern) and
/// optimization.graph.level. INVALID_ARGUMENT for a value that is not one.
Result<ort::SessionSettings> session_settings(const repository::ModelConfig& config);

}  // namespace sonic::onnx

// One ONNX Runtime inference session: a model file read and optimized, the graph's inputs and
// outputs described, and runs.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ort_runtime.hpp"

namespace sonic::onnx::ort {

/// How a session is built: Triton's onnxruntime backend's model parameters, with sonic's default
/// of one intra-op thread (docs/models.md says why).
struct SessionSettings {
  int intra_op_threads = 1;  ///< 0: ONNX Runtime's choice, one per physical core
  int inter_op_threads = 0;  ///< 0: ONNX Runtime's default; used in parallel execution mode only
  ExecutionMode execution_mode = ExecutionMode::Sequential;
  GraphOptimization optimization = GraphOptimization::All;
  bool memory_arena = true;
  bool memory_pattern = true;
  /// One session for every instance (Triton's share_session_between_instances).
  bool share_session = false;
  /// Session config entries ("session.*" keys of ONNX Runtime), set as given.
  std::vector<std::pair<std::string, std::string>> entries;
};

/// A graph input or output as ONNX Runtime describes it.
struct ValueInfo {
  std::string name;
  ValueKind kind = ValueKind::Unknown;
  ElementType element = ElementType::Undefined;  ///< for a tensor
  std::vector<std::int64_t> shape;               ///< for a tensor; -1 for a symbolic dimension
};

class Session {
 public:
  /// A session of the model at `model_path`, whose external data files ONNX Runtime finds next
  /// to it. INVALID_ARGUMENT with ONNX Runtime's words for a file it cannot load.
  static Result<Session> open(const Runtime& runtime, const std::string& model_path,
                              const SessionSettings& settings);

  const std::vector<ValueInfo>& inputs() const noexcept { return inputs_; }
  const std::vector<ValueInfo>& outputs() const noexcept { return outputs_; }

  /// Runs the graph on `inputs` (named by `input_names`, in the same order) and answers the
  /// outputs named by `output_names`, in that order, each allocated by ONNX Runtime. Safe to
  /// call from several threads at once (ONNX Runtime's Run is).
  Result<std::vector<ValueHandle>> run(const std::vector<const char*>& input_names,
                                       const std::vector<const OrtValue*>& inputs,
                                       const std::vector<const char*>& output_names) const;

 private:
  Session(const Runtime& runtime, SessionHandle session)
      : runtime_(&runtime), session_(std::move(session)) {}
  Result<void> describe();

  const Runtime* runtime_;
  SessionHandle session_;
  std::vector<ValueInfo> inputs_;
  std::vector<ValueInfo> outputs_;
};

}  // namespace sonic::onnx::ort

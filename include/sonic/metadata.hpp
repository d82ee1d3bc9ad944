// sonic — what servers and models say about themselves: metadata and statistics.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "sonic/tensor.hpp"

namespace sonic {

/// A model as a call names it: its name, and its version (empty: the server's choice).
struct ModelRef {
  std::string name;
  std::string version;

  friend bool operator<(const ModelRef& a, const ModelRef& b) {
    return std::tie(a.name, a.version) < std::tie(b.name, b.version);
  }
  friend bool operator==(const ModelRef& a, const ModelRef& b) {
    return a.name == b.name && a.version == b.version;
  }
  friend bool operator!=(const ModelRef& a, const ModelRef& b) { return !(a == b); }
};

/// A tensor a model takes or produces; -1 in the shape marks a variable dimension.
struct TensorMetadata {
  std::string name;
  DataType dtype = DataType::Fp32;
  Shape shape;
};

/// A server's answer to ServerMetadata.
struct ServerMetadata {
  std::string name;
  std::string version;
  std::vector<std::string> extensions;
};

/// A model's answer to ModelMetadata.
struct ModelMetadata {
  std::string name;
  std::vector<std::string> versions;
  std::string platform;
  std::vector<TensorMetadata> inputs;
  std::vector<TensorMetadata> outputs;

  /// The input of that name, or nullptr.
  const TensorMetadata* find_input(std::string_view input) const noexcept {
    for (const auto& t : inputs) {
      if (t.name == input) return &t;
    }
    return nullptr;
  }
  /// The output of that name, or nullptr.
  const TensorMetadata* find_output(std::string_view output) const noexcept {
    for (const auto& t : outputs) {
      if (t.name == output) return &t;
    }
    return nullptr;
  }
};

/// A count of events and the nanoseconds they took, as in KServe's StatisticDuration.
struct Duration {
  std::uint64_t count = 0;
  std::uint64_t ns = 0;
};

/// Executions of one batch size, as InferBatchStatistics reports them.
struct BatchStatistics {
  std::uint64_t batch_size = 0;
  Duration compute_input;
  Duration compute_infer;
  Duration compute_output;
};

/// Failed requests by cause, as Triton's failure counter labels them (its `reason`: REJECTED,
/// CANCELED, BACKEND, OTHER).
struct FailureCounts {
  std::uint64_t rejected = 0;  ///< refused by the model's queue: full, or its timeout passed
  /// answered unrun because its caller went away (InferRequest::caller): cancelled, or past its
  /// deadline, as Triton counts a request whose gRPC call was cancelled or timed out
  std::uint64_t canceled = 0;
  std::uint64_t backend = 0;  ///< the model's own execution failed
  std::uint64_t other = 0;    ///< the rest: requests the model's configuration refuses
};

/// Cumulative statistics of one model version, as ModelStatistics reports them.
struct ModelStatistics {
  std::string name;
  std::string version;
  std::uint64_t last_inference_ms = 0;       ///< ms since the epoch of the last request; 0 if none
  std::uint64_t inference_count = 0;         ///< inferences, counting each batch element
  std::uint64_t execution_count = 0;         ///< model executions
  Duration success;                          ///< successful requests, end to end on the server
  Duration fail;                             ///< failed requests
  FailureCounts failures;                    ///< the failed requests by cause
  std::uint64_t pending = 0;                 ///< queued now for an execution not yet started
  Duration queue;                            ///< waiting for an execution slot
  Duration compute_input;                    ///< preparing inputs
  Duration compute_infer;                    ///< running the model
  Duration compute_output;                   ///< preparing outputs
  std::vector<BatchStatistics> batch_stats;  ///< per batch size the model executed
};

/// A model's state, as Triton's core names them (ModelReadyState) and RepositoryIndex carries
/// them: "READY", "UNAVAILABLE", "LOADING", "UNLOADING"; Unknown for a state not given, or one
/// this library does not know.
enum class ModelState : std::uint8_t { Unknown, Ready, Unavailable, Loading, Unloading };

/// Its name on the wire ("READY"; "UNKNOWN" for Unknown).
inline std::string_view model_state_name(ModelState state) noexcept {
  switch (state) {
    case ModelState::Ready: return "READY";
    case ModelState::Unavailable: return "UNAVAILABLE";
    case ModelState::Loading: return "LOADING";
    case ModelState::Unloading: return "UNLOADING";
    case ModelState::Unknown: break;
  }
  return "UNKNOWN";
}

/// The state of that name; Unknown for another.
inline ModelState model_state_named(std::string_view name) noexcept {
  for (auto state :
       {ModelState::Ready, ModelState::Unavailable, ModelState::Loading, ModelState::Unloading}) {
    if (model_state_name(state) == name) return state;
  }
  return ModelState::Unknown;
}

/// A model of a server's repository, as RepositoryIndex lists it.
struct ModelIndex {
  std::string name;
  std::string version;
  ModelState state = ModelState::Unknown;
  std::string reason;  ///< why it is not ready, when it is not
  /// Taken out of service on purpose (Triton's reason "unloaded"), not failed: a server whose
  /// models are READY or unloaded is ready.
  bool unloaded = false;
};

}  // namespace sonic

// sonic — a model's configuration as Triton writes it: config.pbtxt, the protobuf text format of
// inference.ModelConfig (proto/model_config.proto, Triton's field numbers). The fields sonic acts
// on are here; Triton's others are read, named in `ignored_fields`, and left alone.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sonic/detail/export.hpp"
#include "sonic/error.hpp"
#include "sonic/tensor.hpp"

namespace sonic::repository {

/// One input or output (ModelInput, ModelOutput).
struct TensorConfig {
  std::string name;
  std::optional<DataType> data_type;  ///< unset: TYPE_INVALID, to be completed from the model
  /// Without the batch dimension when the model batches; -1 is a dimension of any size.
  std::vector<std::int64_t> dims;
  /// The shape the model itself takes or gives, when it differs from dims (same element count).
  std::optional<std::vector<std::int64_t>> reshape;
  bool optional = false;  ///< an input requests may leave out
  /// An output's labels, one per line, a file of the model's directory: a request that asks
  /// for the output's top classes ("classification") gets "value:index:label".
  std::string label_filename;
  /// The fields sonic does not act on (format, is_shape_tensor, ...), serialized as they came.
  std::string kept;
};

/// Which numbered version directories are served (ModelVersionPolicy).
struct VersionPolicy {
  enum class Kind { Latest, All, Specific };
  Kind kind = Kind::Latest;
  std::uint32_t latest_count = 1;      ///< Latest: how many of the highest versions
  std::vector<std::int64_t> versions;  ///< Specific: these
};

/// A group of copies of the model (ModelInstanceGroup): each copy runs one execution at a time.
struct InstanceGroup {
  enum class Kind { Auto, Gpu, Cpu, Model };
  std::string name;
  Kind kind = Kind::Auto;
  std::int32_t count = 1;
  /// The fields sonic does not act on (gpus, rate_limiter, host_policy, ...), serialized.
  std::string kept;
};

/// What happens to waiting requests (ModelQueuePolicy).
struct QueuePolicyConfig {
  bool delay_on_timeout = false;  ///< timeout_action DELAY (else REJECT)
  std::uint64_t default_timeout_microseconds = 0;
  bool allow_timeout_override = false;
  std::uint32_t max_queue_size = 0;
};

/// Merging concurrent requests into one execution (ModelDynamicBatching).
struct DynamicBatching {
  std::vector<std::int32_t> preferred_batch_sizes;
  std::uint64_t max_queue_delay_microseconds = 0;
  bool preserve_ordering = false;
  std::uint64_t priority_levels = 0;
  std::uint64_t default_priority_level = 0;
  QueuePolicyConfig default_queue_policy;
  std::map<std::uint64_t, QueuePolicyConfig> priority_queue_policy;
  /// The fields sonic does not act on, serialized as they came.
  std::string kept;
};

/// One control input of a stateful model (a ControlInput with its one Control).
struct SequenceControlConfig {
  enum class Kind { Start = 0, Ready = 1, End = 2, CorrelationId = 3 };
  std::string input;
  Kind kind = Kind::Start;
  /// A flag's false and true values: exactly one of these holds both.
  std::vector<std::int32_t> int32_false_true;
  std::vector<float> fp32_false_true;
  std::vector<bool> bool_false_true;
  std::optional<DataType> data_type;  ///< the correlation id's type
  std::size_t controls = 1;           ///< Controls the input lists (sonic takes one)
};

/// A tensor a sequence carries from one request to the next (ModelSequenceBatching.State).
struct SequenceStateConfig {
  std::string input_name;
  std::string output_name;
  std::optional<DataType> data_type;
  std::vector<std::int64_t> dims;  ///< without the batch dimension
  /// Its first value (InitialState): zeros (also when none is given), or a file's bytes, read
  /// from the model's initial_state/ directory, of shape `initial_dims`.
  std::string initial_data_file;
  std::vector<std::int64_t> initial_dims;
  std::size_t initial_states = 0;  ///< InitialStates given (sonic takes one at most)
};

/// Routing a stateful model's requests by sequence (ModelSequenceBatching).
struct SequenceBatchingConfig {
  std::uint64_t max_sequence_idle_microseconds = 0;  ///< 0: 1 s
  std::vector<SequenceControlConfig> controls;
  std::vector<SequenceStateConfig> states;
  /// The message as it was read, reported back as it came.
  std::string encoded;
};

/// One model of an ensemble's pipeline (ModelEnsembling.Step).
struct EnsembleStep {
  std::string model_name;
  std::int64_t model_version = -1;  ///< -1: the model's default (highest) version
  /// The step model's input -> the ensemble tensor it takes.
  std::map<std::string, std::string> input_map;
  /// The step model's output -> the ensemble tensor it gives.
  std::map<std::string, std::string> output_map;
};

/// What sonic reads of a ModelConfig.
struct SONIC_EXPORT ModelConfig {
  std::string name;
  std::string platform;  ///< "onnxruntime_onnx", "pytorch_libtorch", ...
  std::string backend;   ///< "onnxruntime", "pytorch", ...
  VersionPolicy version_policy;
  /// Largest batch a request (or a merged batch) may have; 0: the model does not batch, and
  /// dims are the whole shape.
  std::int32_t max_batch_size = 0;
  std::vector<TensorConfig> inputs;
  std::vector<TensorConfig> outputs;
  std::vector<InstanceGroup> instance_groups;
  std::optional<DynamicBatching> dynamic_batching;
  std::optional<SequenceBatchingConfig> sequence_batching;
  std::string
      default_model_filename;  ///< the model file in a version directory, if not the default
  std::map<std::string, std::string> parameters;  ///< the free-form parameters (string_value)
  bool decoupled = false;
  /// An ensemble's steps (`ensemble_scheduling`, with platform "ensemble"). The field is also
  /// kept in `kept`, and written back from there.
  std::optional<std::vector<EnsembleStep>> ensemble_steps;
  /// `ensemble_scheduling.max_inflight_requests`: in Triton, how many requests of the steps
  /// before it a step may have unfinished; here, how many responses of a decoupled step a
  /// request may hold for the step's return (docs/models.md, Ensembles). 0: no limit.
  std::uint32_t ensemble_max_inflight_requests = 0;
  /// Triton's fields sonic does not act on, as "ModelConfig.optimization": kept in `kept`.
  std::vector<std::string> ignored_fields;
  /// Those fields serialized as they came, written back by serialize_model_config(), so that
  /// the ModelConfig call answers every field the file set (CMS's SonicTriton reads the
  /// checksum agent of model_repository_agents, for one).
  std::string kept;

  /// Instances in all groups (1 when no group is given, as Triton's default on a CPU).
  std::int32_t instance_count() const;
};

/// A config.pbtxt read: the text format of inference.ModelConfig. INVALID_ARGUMENT for text that
/// is not one, its message "ORIGIN:LINE:COLUMN: what is wrong" (`origin` names the file).
SONIC_EXPORT Result<ModelConfig> parse_model_config(std::string_view text,
                                                    const std::string& origin);

/// A ModelConfig written as JSON (protobuf's JSON mapping), as Triton's RepositoryModelLoad
/// takes one in its "config" parameter. INVALID_ARGUMENT naming `origin` and the field.
SONIC_EXPORT Result<ModelConfig> parse_model_config_json(std::string_view json,
                                                         const std::string& origin);

/// A config's own consistency, as Triton checks it before loading: names present and unique,
/// types set, dims valid, reshapes of the same size, batching settings within max_batch_size.
/// INVALID_ARGUMENT naming `origin`, the tensor or field, and what to change.
SONIC_EXPORT Result<void> check_model_config(const ModelConfig& config, const std::string& origin);

/// The sequence_batching part of check_model_config(), which needs nothing the backend
/// completes: run before a model is loaded, so that its mistakes are named as such.
SONIC_EXPORT Result<void> check_sequence_batching(const ModelConfig& config,
                                                  const std::string& origin);

/// The config as a serialized inference.ModelConfig (the ModelConfig call's answer).
SONIC_EXPORT std::string serialize_model_config(const ModelConfig& config);

}  // namespace sonic::repository

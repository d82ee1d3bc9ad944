// sonic — how a model takes its requests: merged into batches (Triton's dynamic batching) or
// routed by sequence (Triton's sequence batching). Plain settings; CpuExecutor acts on them.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sonic/tensor.hpp"

namespace sonic {

/// What happens to the requests waiting in one queue of a batching model (Triton's
/// ModelQueuePolicy).
struct QueuePolicy {
  /// A request that waited past its timeout is rejected (UNAVAILABLE, "Request timeout
  /// expired"), or with `delay_expired` (Triton's DELAY) kept and served after the requests of
  /// its queue still in time.
  bool delay_expired = false;
  /// How long a request may wait; 0: as long as it takes.
  std::chrono::microseconds default_timeout{0};
  /// A request's own "timeout" parameter (InferRequest::server_timeout) replaces the default.
  bool allow_timeout_override = false;
  /// Requests waiting at most; more are refused (UNAVAILABLE, "Exceeds maximum queue size").
  /// 0: no bound but the server's memory budget.
  std::uint32_t max_queue_size = 0;
};

/// When to merge a model's requests (Triton's ModelDynamicBatching): a batch runs as soon as it
/// reaches the model's max_batch_size or one of the preferred sizes, or once its oldest request
/// has waited max_queue_delay (0: at once, merging only what arrived while the model was busy).
/// With priority_levels, each level has its own queue and a batch takes from the highest
/// (level 1) first.
struct DynamicBatching {
  std::vector<std::int64_t> preferred_batch_sizes;
  std::chrono::microseconds max_queue_delay{0};
  /// 0: one queue, every request alike. N: requests' "priority" parameter (1 is the highest)
  /// chooses one of N queues; 0, or a priority past N, means default_priority_level.
  std::uint64_t priority_levels = 0;
  std::uint64_t default_priority_level = 0;
  QueuePolicy default_queue_policy;
  std::map<std::uint64_t, QueuePolicy> priority_queue_policy;  ///< by level; others: the default
};

/// A value the sequence batcher gives the model in one of its inputs (Triton's
/// ModelSequenceBatching.Control). The input has shape [1] ([1, 1] when the model batches).
struct SequenceControl {
  enum class Kind {
    Start,          ///< true on a sequence's first request
    Ready,          ///< true: the request's inputs hold data (always, here: no empty slots)
    End,            ///< true on a sequence's last request
    CorrelationId,  ///< the sequence's id: a number of `type`, or the string of a BYTES input
  };
  Kind kind = Kind::Start;
  std::string input;  ///< the model input that carries it
  /// Int32, Fp32 or Bool for the flags; UInt64, Int64, UInt32, Int32 (the id's low bits) or
  /// Bytes for the correlation id.
  DataType type = DataType::Int32;
  double false_value = 0;  ///< for the flags (Triton's *_false_true pair)
  double true_value = 1;
};

/// A tensor a sequence keeps from one request to the next (Triton's implicit state): the
/// model's output `output` of one request is its input `input` in the next. A sequence's
/// first request gets `initial` (zeros when empty), of shape `initial_dims`, or when those are
/// not given `dims` with each -1 as 1 (and a batch dimension of 1 first when the model
/// batches).
struct SequenceState {
  std::string input;
  std::string output;
  DataType type = DataType::Fp32;
  /// Without the batch dimension; a -1 dimension takes whatever size the model gives.
  Shape dims;
  std::vector<std::uint8_t> initial;
  Shape initial_dims;
};

/// What a server holds for sequences: bounds that a client opening sequences and never ending
/// them cannot pass.
struct SequenceLimits {
  /// A sequence without a request for this long is dropped (Triton's
  /// max_sequence_idle_microseconds, 1 s by default).
  std::chrono::microseconds idle{1'000'000};
  /// Sequences in progress at once; a START beyond them is RESOURCE_EXHAUSTED.
  std::size_t max_sequences = 1024;
  /// Bytes of a string sequence id: each sequence in progress keeps its id.
  std::size_t max_id_bytes = 256;
  /// Bytes of implicit state held by all sequences together; a request whose state would pass
  /// it fails with RESOURCE_EXHAUSTED and its sequence keeps the state it had.
  std::size_t max_state_bytes = std::size_t{256} << 20;
};

/// How a stateful model takes its requests (Triton's ModelSequenceBatching, one request per
/// execution: requests of different sequences run side by side on the executor's threads, not
/// merged into a batch).
struct SequenceBatching {
  std::vector<SequenceControl> controls;
  std::vector<SequenceState> states;
  SequenceLimits limits;
};

}  // namespace sonic

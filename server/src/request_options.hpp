// The request parameters Triton reserves, checked as Triton checks them (its gRPC front end,
// SetInferenceRequestMetadata in src/grpc/infer_handler.cc): a client whose request Triton
// would refuse is refused here too, with Triton's words, and a request Triton takes is taken.
#pragma once

#include "protocol/grpc_wire.hpp"
#include "sonic/request.hpp"

namespace sonic::server {

/// INVALID_ARGUMENT when a reserved parameter has the wrong type or value:
/// - `sequence_id`: int64 or string;
/// - `sequence_start`, `sequence_end`: bool;
/// - `priority`: int64 (not negative) or uint64;
/// - `timeout`: int64;
/// - a name starting with `triton_` other than those Triton allows.
/// As in Triton, `priority` and `timeout` act in a model's dynamic batcher (its priority levels
/// and queue policy, CpuExecutor's DynamicBatching); elsewhere they are accepted and change
/// nothing. The sequence options act in a stateful model's sequence batcher (CpuExecutor's
/// SequenceBatching).
Result<void> check_request_options(const InferRequest& request);

/// A ModelInferRequest decoded (protocol::decode_infer_request) and its options checked: what
/// each of the server's front ends (gRPC, TCP) takes from the wire.
Result<InferRequest> read_infer_request(protocol::ReceivedMessage message);

}  // namespace sonic::server

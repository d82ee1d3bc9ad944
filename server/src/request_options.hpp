// The request parameters Triton reserves, checked as Triton checks them (its gRPC front end,
// SetInferenceRequestMetadata in src/grpc/infer_handler.cc): a client whose request Triton
// would refuse is refused here too, with Triton's words, and a request Triton takes is taken.
#pragma once

#include <chrono>
#include <memory>
#include <optional>

#include "protocol/grpc_wire.hpp"
#include "sonic/caller.hpp"
#include "sonic/request.hpp"
#include "sonic/transport.hpp"

namespace sonic::server {

/// INVALID_ARGUMENT when a reserved parameter has the wrong type or value:
/// - `sequence_id`: int64 or string;
/// - `sequence_start`, `sequence_end`: bool;
/// - `priority`: int64 (not negative) or uint64;
/// - `timeout`: int64;
/// - protocol::kClientTimeoutParameter: int64 (not negative) or uint64;
/// - a name starting with `triton_` other than those Triton allows.
/// As in Triton, `priority` and `timeout` act in a model's dynamic batcher (its priority levels
/// and queue policy, CpuExecutor's DynamicBatching); elsewhere they are accepted and change
/// nothing. The sequence options act in a stateful model's sequence batcher (CpuExecutor's
/// SequenceBatching).
Result<void> check_request_options(const InferRequest& request);

/// A ModelInferRequest decoded (protocol::decode_infer_request) and its options checked: what
/// each of the server's front ends (gRPC, TCP) takes from the wire.
Result<InferRequest> read_infer_request(protocol::ReceivedMessage message);

/// Who waits for a request that arrived at `arrived` (sonic::Caller, which every queue of the
/// server looks at): until the earliest of `arrived` plus `transport_timeout` (gRPC's
/// grpc-timeout) and `arrived` plus the request's protocol::kClientTimeoutParameter (how
/// sonic's HTTP and TCP clients send theirs); for ever when it carries neither.
std::shared_ptr<Caller> caller_of(const InferRequest& request, Clock::time_point arrived,
                                  std::optional<std::chrono::nanoseconds> transport_timeout = {});

/// Shortens `caller`'s deadline to `arrived` plus the request's
/// protocol::kClientTimeoutParameter, when it has one: for a caller made before its request was
/// decoded (an HTTP request's, a compressed TCP frame's).
void take_client_timeout(Caller& caller, const InferRequest& request, Clock::time_point arrived);

}  // namespace sonic::server

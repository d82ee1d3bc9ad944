// The KServe v2 inference messages, encoded and decoded by hand so that tensor bytes travel
// from memory to socket and from socket to aligned buffers without passing through protobuf.
// Field numbers follow grpc_service.proto (ModelInferRequest / ModelInferResponse).
#pragma once

#include <memory>

#include "grpc_wire.hpp"
#include "names.hpp"
#include "sonic/detail/export.hpp"
#include "sonic/request.hpp"

namespace sonic::protocol {

/// Top-level field numbers of the raw tensor payloads.
inline constexpr std::uint32_t kRawInputField = 7;   // ModelInferRequest.raw_input_contents
inline constexpr std::uint32_t kRawOutputField = 6;  // ModelInferResponse.raw_output_contents

/// A ModelInferRequest whose inputs travel as raw_input_contents, borrowed from the request's
/// tensors, owned and borrowed alike: the request must outlive the sending of the body (as
/// Transport::infer_async's caller keeps it until the call is done).
/// Inputs with a shared_memory_region parameter send no bytes: only their name, type, shape.
SONIC_EXPORT Result<std::shared_ptr<OutgoingBody>> encode_infer_request(
    const InferRequest& request, std::size_t max_message_bytes);

/// The envelopes alone: every field but the raw contents (for transports that carry tensors
/// their own way; decode them back with the raw payloads in a ReceivedMessage).
SONIC_EXPORT std::string infer_request_envelope(const InferRequest& request);
SONIC_EXPORT std::string infer_response_envelope(const InferResult& result);

/// An InferResult whose outputs view the message's raw buffers. A malformed or lying response
/// (sizes that do not fit shapes, unknown datatypes, mismatched counts) is INTERNAL.
///
/// `placed` are the request's outputs that it placed in shared memory (those with a
/// shared_memory_region parameter), or null when none are. Triton answers such an output with
/// an empty raw_output_contents entry and no parameters, so only the request tells that its
/// bytes are in the region; the decoded output then carries the request's placement
/// parameters, as it does when a server (sonic-server before 0.3) echoes them.
SONIC_EXPORT Result<InferResult> decode_infer_response(
    ReceivedMessage message, const std::vector<RequestedOutput>* placed = nullptr);

/// The outputs of `request` placed in shared memory; empty when none are.
SONIC_EXPORT std::vector<RequestedOutput> outputs_in_shared_memory(const InferRequest& request);

/// The server's view of a ModelInferRequest: raw or typed contents, every tensor checked.
/// Malformed input is INVALID_ARGUMENT.
SONIC_EXPORT Result<InferRequest> decode_infer_request(ReceivedMessage message);

/// A ModelInferResponse with raw_output_contents borrowed from the result's tensors (kept
/// alive by the body).
SONIC_EXPORT Result<std::shared_ptr<OutgoingBody>> encode_infer_response(
    const InferResult& result, std::size_t max_message_bytes);

}  // namespace sonic::protocol

// The KServe v2 inference messages, encoded and decoded by hand so that tensor bytes travel
// from memory to socket and from socket to aligned buffers without passing through protobuf.
// Field numbers follow grpc_service.proto (ModelInferRequest / ModelInferResponse).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "grpc_wire.hpp"
#include "names.hpp"
#include "sonic/detail/export.hpp"
#include "sonic/request.hpp"
#include "sonic/transport.hpp"

namespace sonic::protocol {

/// Top-level field numbers of the raw tensor payloads.
inline constexpr std::uint32_t kRawInputField = 7;   // ModelInferRequest.raw_input_contents
inline constexpr std::uint32_t kRawOutputField = 6;  // ModelInferResponse.raw_output_contents
/// ModelStreamInferResponse.infer_response (field 2)'s raw_output_contents.
inline const RawFieldPath kStreamResponseRawField{kRawOutputField, 2};

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

/// Appends one entry to an encoded ModelInferRequest's parameters (field 4: a map field may
/// come anywhere in the message, and a later entry of a key wins): a transport's own parameter
/// added without copying the request.
SONIC_EXPORT void append_request_parameter(std::string& envelope, const std::string& key,
                                           const Parameter& value);

/// The time left before `deadline`, in whole microseconds rounded up (a server must never hold
/// a request for less time than its client waits), as sonic's HTTP and TCP clients send it in
/// the request parameter kClientTimeoutParameter (names.hpp); nothing without a deadline.
inline std::optional<std::int64_t> client_timeout_us(Deadline deadline) {
  if (deadline == Deadline::max()) return std::nullopt;
  const auto left = std::chrono::ceil<std::chrono::microseconds>(deadline - Clock::now());
  return std::max<std::int64_t>(left.count(), 1);
}

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

// ---- ModelStreamInfer ------------------------------------------------------------------
// rpc ModelStreamInfer(stream ModelInferRequest) returns (stream ModelStreamInferResponse),
// where ModelStreamInferResponse { string error_message = 1; ModelInferResponse
// infer_response = 2; }. Requests are ModelInferRequests: encode_infer_request() and
// decode_infer_request() serve both RPCs.

/// A ModelStreamInferResponse whose infer_response is `result`, its raw outputs borrowed from
/// the result's tensors (kept alive by the body), as encode_infer_response() does.
SONIC_EXPORT Result<std::shared_ptr<OutgoingBody>> encode_stream_infer_response(
    const InferResult& result, std::size_t max_message_bytes);

/// The ModelStreamInferResponse of a request that failed, as Triton sends it: error_message,
/// and an infer_response naming the request (its id, model and version) and nothing else, with
/// `parameters` (Triton's triton_final_response, when the model ran).
SONIC_EXPORT std::shared_ptr<OutgoingBody> encode_stream_error(const Error& error,
                                                               const InferRequest& request,
                                                               const Parameters& parameters = {});

/// The empty last response to a decoupled model's request (Triton sends it when the request
/// set triton_enable_empty_final_response): an infer_response naming the request, with
/// triton_final_response = true and no outputs.
SONIC_EXPORT std::shared_ptr<OutgoingBody> encode_stream_final(const InferRequest& request);

/// A ModelStreamInferResponse as a MessageReader with kStreamResponseRawField splits it: its
/// infer_response, whose outputs are views of the reader's buffers (no copy), or its
/// error_message. The wire carries no code for the error: it is UNKNOWN, and the failed
/// request's id, when the server named it, is in `failed_id`. A malformed message is INTERNAL.
SONIC_EXPORT Result<InferResult> decode_stream_infer_response(ReceivedMessage message,
                                                              std::string* failed_id = nullptr);

}  // namespace sonic::protocol

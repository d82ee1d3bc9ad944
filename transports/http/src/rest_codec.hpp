// KServe v2 over HTTP/REST as Triton's HTTP frontend speaks it (server src/http_server.cc,
// docs/protocol/extension_binary_data.md), for the http:// client transport: inference with the
// binary tensor data extension both ways, and each control method of the gRPC service mapped to
// its REST route. No sockets here: what to send, and what an answer means.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sonic/control.hpp"
#include "sonic/error.hpp"
#include "sonic/request.hpp"

namespace sonic::http {

/// One HTTP request to send: its method, target, JSON (or empty) body, and for inference the
/// input tensors' bytes that follow the JSON (the binary tensor data extension), borrowed from
/// the InferRequest, which outlives the call.
struct RestRequest {
  std::string method;  ///< "GET" or "POST"
  std::string target;  ///< "/v2/models/simple/infer"
  std::string json;    ///< the body, or its JSON part when binary data follows
  struct Bytes {
    const void* data;
    std::size_t size;
  };
  std::vector<Bytes> binary;  ///< in the order the JSON lists the inputs
  std::size_t binary_bytes = 0;
};

/// "/v2/models/NAME[/versions/VERSION]" with each part percent-encoded (RFC 3986 unreserved
/// characters stay as they are).
std::string model_target(std::string_view name, std::string_view version);

/// The POST of `request`: its inputs as binary data (binary_data_size), except those placed in
/// shared memory (no bytes), and every output asked for as binary data (binary_data_output,
/// and binary_data on each named output), so that tensors cross the wire unconverted. With
/// `client_timeout_us`, the time left before the caller's deadline goes with it as the request
/// parameter protocol::kClientTimeoutParameter, so that the server gives up when the caller does.
RestRequest encode_rest_infer(const InferRequest& request,
                              std::optional<std::int64_t> client_timeout_us = std::nullopt);

/// An inference answer's JSON, parsed once for binary_layout() and decode_rest_infer().
/// INTERNAL for text that is not a JSON object.
Result<nlohmann::json> parse_rest_answer(std::string_view json);

/// The sizes of the binary parts that follow an inference answer's JSON, in order: the
/// binary_data_size of each output that has one. INTERNAL for sizes that are not sizes, or that
/// do not add up to `binary_bytes` (the body past the JSON).
Result<std::vector<std::size_t>> binary_layout(const nlohmann::json& answer,
                                               std::size_t binary_bytes);

/// The answer to an inference request: its JSON, and the binary parts binary_layout() found,
/// each in its own aligned buffer, which the outputs view (no copy). Outputs without binary
/// data carry JSON "data", which is converted. INTERNAL for an answer that does not fit.
///
/// `placed`: the request's outputs placed in shared memory (protocol::outputs_in_shared_memory),
/// or null when none are. Triton's HTTP frontend answers such an output with its name, datatype
/// and shape alone, so only the request tells that its bytes are in the region: the decoded
/// output is then an empty tensor of that type and shape with the request's placement
/// parameters, as over gRPC.
Result<InferResult> decode_rest_infer(const nlohmann::json& answer,
                                      std::vector<std::shared_ptr<std::uint8_t>> parts,
                                      const std::vector<std::size_t>& sizes,
                                      const std::vector<RequestedOutput>* placed = nullptr);

/// The REST request of a control method given its serialized protobuf request: its route and
/// verb from the method table (protocol/control_methods.hpp), its body as Triton's HTTP
/// frontend reads it. INVALID_ARGUMENT for a malformed request.
Result<RestRequest> encode_rest_control(ControlMethod method, std::string_view request);

/// The serialized protobuf response of `method` from its REST answer (status and body). An
/// error status is the server's error (rest_error()); health and readiness read the status.
Result<std::string> decode_rest_control(ControlMethod method, int status, std::string_view body);

/// The error an HTTP error answer carries: Triton's {"error": "..."} message (or the body's
/// text), with the status code Triton's HttpCodeFromError maps to that status (400
/// INVALID_ARGUMENT, 404 NOT_FOUND, 500 INTERNAL, 501 UNIMPLEMENTED, 503 UNAVAILABLE), and the
/// usual meanings of the statuses a proxy in front of it may answer with.
Error rest_error(int status, std::string_view body);

}  // namespace sonic::http

// KServe v2 REST inference bodies, with Triton's binary tensor data extension: a request body
// decoded into an InferRequest, and an InferResult encoded as the body Triton's HTTP frontend
// answers with (server src/http_server.cc, docs/protocol/extension_binary_data.md).
//
// A body is JSON, or JSON followed by binary data when the header Inference-Header-Content-
// Length gives the JSON's length. An input whose parameters carry binary_data_size takes that
// many bytes of the binary part, in the order the inputs are listed; the others carry "data",
// a flat or nested JSON array of their elements. Outputs come back as JSON "data" (flat, row
// major) unless the request asks for binary data ("binary_data_output" for all, an output's
// "binary_data" for one); binary outputs follow the JSON in the order they are listed, each
// with its binary_data_size.
// Triton's shared memory extension: an input or output whose parameters name a
// shared_memory_region (with shared_memory_byte_size and, optionally, shared_memory_offset) has
// its bytes in a registered region. Such an input is decoded as a descriptor (type and shape)
// that the server binds to the region; such an output, once written there, is answered with
// its name, datatype and shape only.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sonic/error.hpp"
#include "sonic/request.hpp"

namespace sonic::server {

/// A request decoded, and how its outputs are to be written.
struct HttpInferRequest {
  InferRequest request{""};
  bool binary_outputs = false;                ///< the request's binary_data_output
  std::map<std::string, bool> binary_output;  ///< outputs that asked for or against it
};

/// Decodes the body of POST v2/models/MODEL[/versions/VERSION]/infer. `json_length`: the
/// Inference-Header-Content-Length header's value, when sent. Binary inputs are views into
/// `body`, which `owner` keeps alive and the request keeps `owner`. INVALID_ARGUMENT, in
/// Triton's words where it has them, for a body that does not describe a request.
Result<HttpInferRequest> decode_http_infer(const std::string& model, const std::string& version,
                                           std::shared_ptr<const void> owner, std::string_view body,
                                           std::optional<std::size_t> json_length);

/// An answer's body, and the JSON's length when binary data follows it (the value of the
/// answer's Inference-Header-Content-Length).
struct HttpInferBody {
  std::string body;  ///< the JSON
  std::optional<std::size_t> json_length;
  /// The binary outputs that follow the JSON, in order: written from the tensors themselves,
  /// which hold their bytes (a borrowed output is copied into one that does).
  std::vector<Tensor> binary;
};

/// Encodes `result` as the answer to `asked`.
Result<HttpInferBody> encode_http_infer(const InferResult& result, const HttpInferRequest& asked);

}  // namespace sonic::server

// sonic — checks of a request before it leaves the process.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sonic/detail/export.hpp"
#include "sonic/error.hpp"
#include "sonic/metadata.hpp"
#include "sonic/request.hpp"

namespace sonic {

/// Checks metadata headers before they reach the wire: HTTP/2 needs lower-case token names, the
/// protocol owns grpc-*, te, content-type and user-agent, and only "-bin" headers may carry bytes
/// that are not printable ASCII (they travel base64-encoded).
SONIC_EXPORT Result<void> check_headers(
    const std::vector<std::pair<std::string, std::string>>& headers);

/// Checks what needs no model knowledge: a model name, a timeout that is not negative, unique
/// input names, and bytes that fit each input's shape and datatype (unless a
/// shared_memory_region parameter says where they are). Errors are INVALID_ARGUMENT and name
/// the tensor.
SONIC_EXPORT Result<void> check_request(const InferRequest& request);

/// Checks a request against its model's metadata: every input known, of the right datatype and
/// shape (-1 matches any size), every requested output known. Inputs the metadata lists but the
/// request lacks are left to the server, since models may declare optional inputs.
SONIC_EXPORT Result<void> validate_request(const ModelMetadata& model, const InferRequest& request);

}  // namespace sonic

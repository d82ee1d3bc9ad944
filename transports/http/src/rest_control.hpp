// The typed control calls (sonic/control.hpp) as REST requests and answers, straight: each
// call's verb and path from the method table (protocol/control_methods.hpp), its answer read
// from the JSON Triton's HTTP frontend writes (server src/http_server.cc). Calls given as the
// service's messages (RawControlRequest), and answers that are Triton's printing of a protobuf
// message (a model's configuration and statistics, whose printing the message defines), go
// through the messages (rest_codec.hpp's encode_rest_control and decode_rest_control).
#pragma once

#include <string_view>

#include "rest_codec.hpp"
#include "sonic/control.hpp"

namespace sonic::http {

/// The REST request of a control call; INVALID_ARGUMENT for a malformed raw request.
Result<RestRequest> encode_rest_request(const ControlRequest& request);

/// The answer to `request` from its REST answer (status and body): the server's error for an
/// error status (rest_error()); INTERNAL for an answer that is not what the method answers.
Result<ControlAnswer> decode_rest_answer(const ControlRequest& request, int status,
                                         std::string_view body);

}  // namespace sonic::http

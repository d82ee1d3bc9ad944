// A ModelStreamInfer call of the gRPC transport: one HTTP/2 stream whose request body stays
// open, requests appended to it as the caller sends them, and whose response messages are
// decoded and handed over as they arrive.
#pragma once

#include <functional>
#include <memory>

#include "client_connection.hpp"
#include "sonic/transport.hpp"

namespace sonic::grpc {

/// Opens the stream as one of `calls` on `channel`: `headers` go with it, no request larger
/// than `max_message_bytes` is sent, and the call ends by `deadline` (Deadline::max(): never).
/// Past `held_bytes_limit` bytes of responses not yet dropped by the caller, the server waits
/// (StreamResponse::window_hold). Requests that shrink are sent compressed with `compression`.
/// The callbacks run on the channel's network thread (Transport::open_stream's contract).
std::unique_ptr<TransportStream> open_grpc_stream(
    std::shared_ptr<GrpcChannel> channel, std::shared_ptr<Calls> calls,
    std::vector<std::pair<std::string, std::string>> headers, std::size_t max_message_bytes,
    std::size_t held_bytes_limit, Compression compression, Deadline deadline,
    std::function<void(StreamResponse)> on_response, Callback<void> done);

}  // namespace sonic::grpc

// One call of the gRPC client as it travels: its request body, deadline and headers, what the
// answer said so far, and the handler of its outcome.
#pragma once

#include <asio.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "protocol/grpc_message.hpp"
#include "sonic/detail/unique_function.hpp"
#include "sonic/transport.hpp"

namespace sonic::grpc {

class ClientConnection;

/// When a call passed each step, for InferResult::timing(). Written on the network thread once
/// the call is posted there; read by the completion, which runs on that thread too.
struct CallTimes {
  Clock::time_point encoded;     ///< the caller's thread finished encoding
  Clock::time_point started;     ///< the stream was submitted
  Clock::time_point sent;        ///< the frame ending the request was handed to the socket
  Clock::time_point first_byte;  ///< the answer's headers arrived
  Clock::time_point last_byte;   ///< the stream closed
};

/// One unary gRPC call. Everything but the constructor runs on the network thread.
struct ClientCall {
  ClientCall(std::string method_name, std::shared_ptr<protocol::OutgoingBody> request_body,
             Deadline call_deadline, std::uint32_t raw_field, std::size_t max_message_bytes)
      : method(std::move(method_name)),
        body(std::move(request_body)),
        deadline(call_deadline),
        response_raw_field(raw_field),
        max_response_bytes(max_message_bytes),
        reader(raw_field, max_message_bytes) {}

  /// Times a call may be refused unprocessed and started again before it fails UNAVAILABLE.
  static constexpr int kMaxRefusals = 5;

  /// Forgets a refused attempt so that the call can start again on a new stream.
  void reset_for_retry() {
    stream_id = 0;
    reader = protocol::MessageReader(response_raw_field, max_response_bytes);
    http_status = 0;
    content_type.clear();
    grpc_content_type = false;
    grpc_status.reset();
    grpc_message.clear();
    error_reason.clear();
    body->reserved = 0;
    body->piece_index = 0;
    body->piece_offset = 0;
  }

  std::string method;  ///< of the inference service ("ModelInfer")
  std::shared_ptr<protocol::OutgoingBody> body;
  Deadline deadline;
  std::uint32_t response_raw_field;
  std::size_t max_response_bytes;
  std::vector<std::pair<std::string, std::string>> headers;
  /// Inside the reconnect backoff, wait for the next attempt instead of failing at once (the
  /// client has nowhere else to go).
  bool wait_for_reconnect = false;
  CallTimes times;
  /// Runs exactly once on the network thread, while whoever calls it holds the call (so
  /// `times` may be read there).
  detail::UniqueFunction<void(Result<protocol::ReceivedMessage>)> done;

  // Progress, owned by the connection.
  std::weak_ptr<ClientConnection> connection;  // the one it was last submitted to
  std::int32_t stream_id = 0;
  protocol::MessageReader reader;
  int http_status = 0;
  bool grpc_content_type = false;  ///< the answer's content-type is application/grpc[+...]
  std::string content_type;        ///< the answer's content-type when it is not
  std::optional<StatusCode> grpc_status;
  std::string grpc_message;
  std::string error_reason;  ///< from grpc-status-details-bin
  std::unique_ptr<asio::steady_timer> timer;
  bool finished = false;
  int refusals = 0;  // times the server refused the stream unprocessed
  /// The outcome, held while a write still reads the request's borrowed bytes.
  std::optional<Result<protocol::ReceivedMessage>> parked;
};

}  // namespace sonic::grpc

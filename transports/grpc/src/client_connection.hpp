// One HTTP/2 connection of the gRPC client, and the calls it carries: many concurrent calls
// multiplexed as streams. Everything runs on the connection's network thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "net/call_life.hpp"
#include "net/channel.hpp"
#include "net/connection_settings.hpp"
#include "net/connector.hpp"
#include "net/h2_session.hpp"
#include "net/keepalive.hpp"
#include "protocol/grpc_wire.hpp"
#include "sonic/detail/unique_function.hpp"
#include "sonic/options.hpp"
#include "sonic/transport.hpp"
#include "stream_window.hpp"

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

/// One gRPC call: unary, or a stream's (on_message set). Everything but the constructor runs
/// on the network thread.
/// A call's answer as it comes: its headers, then its messages.
struct CallResponse {
  CallResponse(protocol::RawFieldPath raw_field, std::size_t max_message_bytes)
      : reader(raw_field, max_message_bytes) {}
  protocol::MessageReader reader;
  int http_status = 0;
  bool grpc_content_type = false;  ///< the answer's content-type is application/grpc[+...]
  std::string content_type;        ///< the answer's content-type when it is not
  std::optional<StatusCode> grpc_status;
  std::string grpc_message;
  std::string error_reason;  ///< from grpc-status-details-bin
  /// The server's pushback: grpc-retry-pushback-ms, or Retry-After on an HTTP 429 or 503
  /// that is not gRPC's (a proxy's) answer.
  std::optional<std::chrono::milliseconds> pushback;
  std::optional<std::chrono::milliseconds> retry_after;
};

/// What a stream's call has that a unary call does not.
struct StreamPart {
  /// Each response message as it completes, on the network thread, with the hold that keeps
  /// its bytes counted in `window`; the call's `done` then gets its status, an empty message
  /// when it is OK. A stream is never started again elsewhere.
  detail::UniqueFunction<void(protocol::ReceivedMessage, std::shared_ptr<const void> hold)>
      on_message;
  /// Its flow control: received bytes go back to its HTTP/2 window only while the responses
  /// its caller holds are under the window's limit.
  std::shared_ptr<StreamWindow> window;
  std::size_t window_held_back = 0;  ///< bytes received and not yet given back
};

/// Its `done` runs exactly once on the network thread, while whoever calls it holds the call
/// (so `times` may be read there).
struct ClientCall
    : net::CallLife<Result<protocol::ReceivedMessage>>,
      net::BookEntry<ClientCall, net::CallLife<Result<protocol::ReceivedMessage>>::Done> {
  ClientCall(std::string method_name, std::shared_ptr<protocol::OutgoingBody> request_body,
             Deadline call_deadline, protocol::RawFieldPath raw_field,
             std::size_t max_message_bytes)
      : method(std::move(method_name)),
        body(std::move(request_body)),
        response_raw_field(raw_field),
        max_response_bytes(max_message_bytes) {
    deadline = call_deadline;
  }

  /// Times a call may be refused unprocessed and started again before it fails UNAVAILABLE.
  /// Each refusal proves the server did nothing with it, so starting again is safe; a server
  /// that drains its connections under load (GOAWAY every 50 calls, 100 in flight) refuses
  /// about half of them each time, and 5 let one call in a few hundred fail. The bound only
  /// stops a server that refuses everything from keeping a call forever.
  static constexpr int kMaxRefusals = 16;

  /// Forgets a refused attempt so that the call can start again on a new stream.
  void reset_for_retry() {
    stream_id = 0;
    response.reset();
    body->reserved = 0;
    body->piece_index = 0;
    body->piece_offset = 0;
  }

  std::string method;  ///< of the inference service ("ModelInfer")
  std::shared_ptr<protocol::OutgoingBody> body;
  protocol::RawFieldPath response_raw_field;
  std::size_t max_response_bytes;
  std::vector<std::pair<std::string, std::string>> headers;
  /// Inside the reconnect backoff, wait for the next attempt instead of failing at once (the
  /// client has nowhere else to go).
  bool wait_for_reconnect = false;
  CallTimes times;
  /// Set for a stream's call (its body is open, more messages are appended to it); a unary
  /// call, which a client may hold thousands of, carries none of this.
  std::unique_ptr<StreamPart> stream;

  // Progress, owned by the connection.
  std::weak_ptr<ClientConnection> connection;  // the one it was last submitted to
  std::int32_t stream_id = 0;
  /// What the server answered so far, made when its first header or bytes come: a call still
  /// waiting for its answer carries none (a client may hold 10,000 such calls).
  CallResponse& response_state() {
    if (!response)
      response = std::make_unique<CallResponse>(response_raw_field, max_response_bytes);
    return *response;
  }
  std::unique_ptr<CallResponse> response;
  int refusals = 0;  // times the server refused the stream unprocessed
};

using net::ConnectionSettings;

/// A client connection. Replaced by its channel when it fails or receives GOAWAY.
class ClientConnection final : public net::H2Session {
 public:
  ClientConnection(asio::io_context& io, Endpoint endpoint, ConnectionSettings settings,
                   net::ChannelEvents<ClientCall> events);
  ~ClientConnection() override;

  /// Resolves and connects; calls submitted meanwhile wait (bounded by connect_timeout).
  void connect();
  /// Starts a call, or queues it until the connection is up.
  void submit(std::shared_ptr<ClientCall> call);
  /// Completes the call with `why` now, resetting its stream (CANCEL) if it has one, so that
  /// the server stops working on it. Its outcome waits while a write reads its borrowed bytes.
  void abandon(const std::shared_ptr<ClientCall>& call, Error why);
  /// Sends what was appended to a stream's body since, or its end once it was closed.
  void resume_call(const std::shared_ptr<ClientCall>& call);
  /// Gives a stream's window back what it held back while its caller held many responses.
  void reopen_window(const std::shared_ptr<ClientCall>& call);
  /// Completes every call with `code` and closes the connection.
  void shutdown(StatusCode code, const std::string& why);
  /// False once the connection failed, was shut down, or the server sent GOAWAY.
  bool usable() const noexcept { return !lost_ && !goaway_; }
  /// "grpc://host:port", for messages.
  std::string describe() const;
  /// Closes the connection, ending the write that still reads `call`'s bytes (net::CallLife).
  void let_go(const std::shared_ptr<ClientCall>& call, const std::string& why);

 private:
  enum class State { Idle, Connecting, Ready, Closed };

  void on_connected();
  void connect_failed(const std::string& why);
  void start_stream(const std::shared_ptr<ClientCall>& call);
  // Whether the server's stream limit leaves room for one more stream.
  bool stream_free() const;
  // Starts waiting calls while there is room; hands them back when the connection takes no
  // more (GOAWAY). Runs on the network thread, inside nghttp2's callbacks too (the caller
  // flushes).
  void start_waiting();
  // A waiting call ended (deadline, cancel()): sweeps the ended ones out of the queue once
  // they are half of it.
  void forget_finished_waiting();
  Result<protocol::ReceivedMessage> outcome_of(ClientCall& call, std::uint32_t h2_error) const;
  // Decides the call's outcome (net::settle): parked while a write reads its bytes.
  void complete(const std::shared_ptr<ClientCall>& call, Result<protocol::ReceivedMessage> outcome);
  std::shared_ptr<ClientCall> find(std::int32_t stream_id) const;
  // Gives a call the server never processed back to the channel, to start on a new
  // connection; false when it may not be restarted again.
  bool hand_back(const std::shared_ptr<ClientCall>& call);

  void on_connection_lost(const std::string& why) override;
  // The error for a connection lost before the server sent any HTTP/2 frame: what it seems to
  // be instead, and what to do.
  std::string not_a_grpc_server(const std::string& why) const;
  void on_body_released(protocol::OutgoingBody& body) override;
  static bool carries_grpc(const CallResponse& response);
  int on_data(std::int32_t stream_id, const std::uint8_t* data, std::size_t len) override;
  protocol::MessageReader::Destination read_destination(std::int32_t stream_id) override;
  const protocol::OutgoingBody* sending_body(std::int32_t stream_id) override;

  static int on_header(nghttp2_session*, const nghttp2_frame*, const std::uint8_t*, std::size_t,
                       const std::uint8_t*, std::size_t, std::uint8_t, void*);
  static int on_frame_recv(nghttp2_session*, const nghttp2_frame*, void*);
  static int on_stream_close(nghttp2_session*, std::int32_t, std::uint32_t, void*);
  // A call's stream closed with `error_code`: its outcome, or a start again when the server
  // refused it unprocessed.
  void close_stream(const std::shared_ptr<ClientCall>& call, std::uint32_t error_code);
  static int on_frame_not_send(nghttp2_session*, const nghttp2_frame*, int, void*);
  static int on_frame_send(nghttp2_session*, const nghttp2_frame*, void*);

  asio::io_context& io_;
  Endpoint endpoint_;
  ConnectionSettings settings_;
  net::ChannelEvents<ClientCall> events_;
  std::string authority_;
  State state_ = State::Idle;
  bool goaway_ = false;
  net::Connector connector_;
  net::Keepalive keepalive_;
  // Calls not yet started: until connected, then until the server's stream limit
  // (SETTINGS_MAX_CONCURRENT_STREAMS) has room. Held here rather than submitted to nghttp2,
  // which would keep a request's frame and headers (about 500 bytes) for each call over the
  // limit; a call here costs its entry. One that finished meanwhile (its deadline, cancel())
  // is skipped when its turn comes, or swept out before then (forget_finished_waiting).
  std::deque<std::shared_ptr<ClientCall>> waiting_;
  std::size_t finished_waiting_ = 0;  // calls that ended while in waiting_, since its last sweep
  std::map<std::int32_t, std::shared_ptr<ClientCall>> streams_;  // open streams
  // Completed calls whose request bytes a write still reads, by body.
  std::unordered_map<protocol::OutgoingBody*, std::shared_ptr<ClientCall>> parked_;
  // Scratch space of start_stream, kept to spare an allocation per call.
  std::vector<nghttp2_nv> headers_;
  std::vector<std::string> encoded_headers_;
};

/// An endpoint's connection as the process's clients share it, and each client's calls on it.
using GrpcChannel = net::Channel<ClientConnection, ClientCall>;
using Calls = net::CallBook<ClientConnection, ClientCall>;

}  // namespace sonic::grpc

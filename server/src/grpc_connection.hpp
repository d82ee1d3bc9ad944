// One gRPC client connection of the server: the class and the state of its calls. Its work
// is split by job: grpc_connection.cpp (HTTP/2 and the connection's life), grpc_admission.cpp
// (memory, flow-control windows, timeouts), grpc_unary_calls.cpp (ModelInfer and the control
// and health calls) and grpc_stream_infer.cpp (ModelStreamInfer). Everything runs on the
// connection's network thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "connection_room.hpp"
#include "connection_watch.hpp"
#include "infer_dispatch.hpp"
#include "memory_budget.hpp"
#include "net/connection_set.hpp"
#include "net/h2_session.hpp"
#include "protocol/control_methods.hpp"
#include "protocol/grpc_wire.hpp"
#include "server_context.hpp"

namespace sonic::server {

// Triton's streaming inference: many requests on one call, each answered on it.
constexpr std::string_view kStreamMethod = protocol::kModelStreamInfer;
// Requests of one stream taken at once (queued for or in a model, or answered out of turn);
// the stream's further requests wait unread, and its client in its flow-control window.
constexpr std::size_t kMaxStreamRequests = 64;
// A new stream's window: enough for the message prefix and small requests. A message waiting
// for memory holds at most this much; an admitted one gets kAdmittedStreamWindow. A 64 KiB
// tensor and its envelope fit in it: at exactly 64 KiB their last bytes waited a round trip
// for the window update, a quarter of the throughput of 64 KiB requests one at a time.
constexpr std::uint32_t kInitialStreamWindow = (64 + 4) * 1024;
constexpr std::uint32_t kAdmittedStreamWindow = 16u << 20;
// Calls of one connection waiting for memory beyond which its new calls are refused.
constexpr std::size_t kMaxWaitingStreams = 64;
// Bytes a connection inflates of compressed messages in one turn of its network thread before
// the handlers queued meanwhile run (take_deferred): a few hundred microseconds of zlib.
constexpr std::size_t kInflateTurnBytes = 256u << 10;
// And at most this share of its network thread's time, over windows of kInflateWindow: a thread
// kept busy inflating is preempted by whatever else runs on its cores, and its other
// connections wait with it; one that inflates a quarter of the time sleeps between turns and
// wakes at once for them.
constexpr std::chrono::microseconds kInflateWindow{10000};
constexpr std::chrono::microseconds kInflateShare{2500};

// One request stream on the server.
struct ServerStream {
  std::string path;
  std::string method;  // of the inference service, from the path; empty for another service
  std::string content_type;
  std::string encoding;         // grpc-encoding: how its messages are compressed
  std::string accept_encoding;  // grpc-accept-encoding: how its answers may be
  std::string authorization;    // its "authorization" header
  std::optional<std::chrono::nanoseconds> timeout;
  Clock::time_point started = Clock::now();
  // Who waits for its requests (a stream's share one): made with its first request, from
  // grpc-timeout; cancelled when the client resets the stream or the connection is lost.
  std::shared_ptr<Caller> caller;
  std::optional<protocol::MessageReader> reader;  // made when the first DATA arrives
  std::optional<Error> error;                     // a receive error to answer with
  std::size_t header_bytes = 0;                   // as RFC 9113 counts a header list
  WatchClock::time_point last_data = WatchClock::now();
  bool window_opened = false;  // its message was admitted and its window widened
  bool waiting = false;        // in the connection's queue for memory
  std::shared_ptr<protocol::OutgoingBody> response;
  BudgetHold response_bytes;
  bool request_ended = false;  // the client sent END_STREAM
  bool answered = false;
  bool reset_after_answer = false;  // answered before request_ended: reset once it is sent

  // ModelStreamInfer: `response` is the stream's open body once its headers are sent.
  bool streaming() const { return method == kStreamMethod; }
  std::size_t in_flight = 0;                      // requests taken and not yet answered in full
  std::deque<protocol::ReceivedMessage> backlog;  // requests read while in_flight was at its limit
  std::size_t unconsumed = 0;                     // window held back while the backlog waits
  std::uint64_t next_slot = 0;                    // in-order answers: the next request's number
  std::uint64_t next_to_send = 0;                 // and the number of the next answer to send
  std::map<std::uint64_t, std::shared_ptr<protocol::OutgoingBody>>
      early;                         // answers ahead of their turn
  std::optional<Error> final_error;  // ends the stream with this status
  bool starting = false;             // inside start_stream_requests()

  // Its messages may be compressed: its DATA waits here to be inflated in the connection's
  // turns (take_deferred), from deferred_from on.
  bool paced = false;
  std::string deferred;
  std::size_t deferred_from = 0;
  bool deferring() const { return deferred_from < deferred.size(); }
};

// A unary call's answer, made where its model ran: the body, and the bytes it holds until
// written.
struct Answer {
  Result<std::shared_ptr<protocol::OutgoingBody>> body;
  BudgetHold held;
  Compression encoding = Compression::None;  // how the body is compressed (None: it is not)
};

/// One client connection: decodes calls, runs inference through its InferDispatch, answers.
/// Flow control is the server's: a request message begins in a small stream window and is
/// read on only once the memory budget admits its declared length (then its window widens);
/// until then its client waits, and what it sent ahead stays in the small window.
class GrpcConnection final : public net::H2Session {
 public:
  using IoContext = std::shared_ptr<asio::io_context>;

  GrpcConnection(asio::ip::tcp::socket socket, IoContext io, std::shared_ptr<ServerContext> context,
                 std::shared_ptr<net::ConnectionSet<GrpcConnection>> set, ConnectionSlot slot);

  IoContext io_context() const { return io_; }
  /// Whether, and since when, it waits for its first call (connection_room.hpp).
  WaitingMark& waiting_mark() { return first_call_; }
  /// Closes a connection claimed to make room at the connection cap (its thread).
  void evict();

  /// Starts the (TLS, then HTTP/2) handshake.
  void start();

  /// Ends the connection: GOAWAY, then close once it is written (a peer that does not read
  /// gets half a second).
  void shutdown();

 private:
  using OutgoingBody = protocol::OutgoingBody;
  using ReceivedMessage = protocol::ReceivedMessage;

  // ---- The connection (grpc_connection.cpp) -------------------------------------------------
  void begin_http2();
  void on_connection_lost(const std::string&) override;
  void on_body_end(std::int32_t stream_id, std::uint32_t* flags) override;
  ServerStream* find(std::int32_t id);
  const ShmClient& shm_client();

  static int on_begin_headers(nghttp2_session* session, const nghttp2_frame* frame,
                              void* user_data);
  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                       std::size_t namelen, const std::uint8_t* value, std::size_t valuelen,
                       std::uint8_t, void* user_data);
  const OutgoingBody* sending_body(std::int32_t stream_id) override;
  protocol::MessageReader::Destination read_destination(std::int32_t stream_id) override;
  int on_data(std::int32_t stream_id, const std::uint8_t* data, std::size_t len) override;
  void take(std::int32_t stream_id, ServerStream& stream, const std::uint8_t* data,
            std::size_t len);
  static int on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user_data);
  std::optional<Error> refusal(const ServerStream& stream) const;
  std::optional<Error> health_refusal(const ServerStream& stream) const;
  static int on_frame_send(nghttp2_session* session, const nghttp2_frame* frame, void* user_data);
  static int on_stream_close(nghttp2_session*, std::int32_t stream_id, std::uint32_t,
                             void* user_data);

  // ---- Memory, windows and timeouts (grpc_admission.cpp) -------------------------------------
  void watch();
  void reset_stalled_streams(WatchClock::time_point now);
  void account_window(std::int32_t id, ServerStream& stream, std::size_t len, std::size_t kept);
  std::size_t window_left(std::int32_t id) const;
  void poll_admission();
  void admit_waiting();
  void take_deferred(std::int32_t id);
  void next_inflate_turn();
  bool inflate_share_left();

  // ---- Unary calls (grpc_unary_calls.cpp) ---------------------------------------------------
  void dispatch(std::int32_t id);
  void infer(std::int32_t id, ReceivedMessage message);
  void answer(std::int32_t id, Answer answer);
  void control(std::int32_t id, const std::string& method, const std::string& bytes);
  void health_check(std::int32_t id, const std::string& bytes);
  void reply(std::int32_t id, Result<std::string> message);
  void respond(std::int32_t id, std::shared_ptr<OutgoingBody> body, BudgetHold held,
               Compression encoding = Compression::None);
  void respond_error(std::int32_t id, const Error& error);

  // ---- ModelStreamInfer (grpc_stream_infer.cpp) ---------------------------------------------
  bool decoupled(const InferRequest& request) const;
  void take_stream_messages(std::int32_t id, ServerStream& stream);
  void start_stream_requests(std::int32_t id, ServerStream& stream);
  void stream_infer(std::int32_t id, ServerStream& stream, ReceivedMessage message);
  void stream_answered(std::int32_t id, std::uint64_t slot, std::shared_ptr<OutgoingBody> body);
  void stream_request_done(std::int32_t id, ServerStream& stream, std::size_t requests);
  void stream_response(std::int32_t id, ServerStream& stream,
                       std::shared_ptr<OutgoingBody> message);
  void open_stream_response(std::int32_t id, ServerStream& stream);
  void end_stream_if_done(std::int32_t id);
  void end_with_error(std::int32_t id, const Error& error);

  IoContext io_;
  std::shared_ptr<ServerContext> context_;
  std::shared_ptr<net::ConnectionSet<GrpcConnection>> set_;
  ConnectionSlot slot_;
  const ServerLimits& limits_;
  std::shared_ptr<ConnectionBudget> budget_;
  InferDispatch models_;  // where this connection's inference requests run
  std::map<std::int32_t, std::unique_ptr<ServerStream>> streams_;
  std::deque<std::int32_t> waiting_;  // streams whose message waits for memory, oldest first
  int oversized_header_lists_ = 0;
  std::size_t inflate_left_ = kInflateTurnBytes;  // of this turn (take_deferred)
  bool inflate_turn_posted_ = false;
  WatchClock::time_point inflate_window_{};  // when the window of inflate_spent_ began
  WatchClock::duration inflate_spent_{};     // inflating, in that window
  ConnectionActivity activity_;
  WaitingMark first_call_;  // waiting since accepted, until its first call's headers
  std::optional<ShmClient> shm_client_;
  asio::steady_timer close_timer_;
  asio::steady_timer watch_timer_;
  asio::steady_timer admission_timer_;
};

}  // namespace sonic::server

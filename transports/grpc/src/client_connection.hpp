// One HTTP/2 connection of the gRPC client: many concurrent calls multiplexed as streams.
// Everything runs on the connection's network thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "client_call.hpp"
#include "net/channel.hpp"
#include "net/connector.hpp"
#include "net/h2_session.hpp"
#include "net/keepalive.hpp"
#include "sonic/options.hpp"
#include "sonic/transport.hpp"

namespace sonic::grpc {

/// What shapes a connection (the client options that do): clients whose settings agree may
/// share one.
struct ConnectionSettings {
  std::chrono::milliseconds connect_timeout{};
  std::chrono::milliseconds keepalive_interval{};
  std::chrono::milliseconds keepalive_timeout{};
  std::uint32_t stream_window_bytes = 0;
  std::uint32_t connection_window_bytes = 0;

  static ConnectionSettings of(const ClientOptions& options);
  /// The settings as text, for telling apart connections that cannot be shared.
  std::string key() const;
};

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
  /// Completes every call with `code` and closes the connection.
  void shutdown(StatusCode code, const std::string& why);
  /// False once the connection failed, was shut down, or the server sent GOAWAY.
  bool usable() const noexcept { return !lost_ && !goaway_; }

 private:
  enum class State { Idle, Connecting, Ready, Closed };

  void on_connected();
  void connect_failed(const std::string& why);
  void start_stream(const std::shared_ptr<ClientCall>& call);
  void arm_deadline(const std::shared_ptr<ClientCall>& call);
  Result<protocol::ReceivedMessage> outcome_of(ClientCall& call, std::uint32_t h2_error) const;
  void complete(const std::shared_ptr<ClientCall>& call, Result<protocol::ReceivedMessage> outcome);
  void deliver(ClientCall& call, Result<protocol::ReceivedMessage> outcome);
  std::shared_ptr<ClientCall> find(std::int32_t stream_id) const;
  std::string describe() const;
  // Gives a call the server never processed back to the channel, to start on a new
  // connection; false when it may not be restarted again.
  bool hand_back(const std::shared_ptr<ClientCall>& call);

  void on_connection_lost(const std::string& why) override;
  void on_body_released(protocol::OutgoingBody& body) override;

  static int on_header(nghttp2_session*, const nghttp2_frame*, const std::uint8_t*, std::size_t,
                       const std::uint8_t*, std::size_t, std::uint8_t, void*);
  static int on_data_chunk(nghttp2_session*, std::uint8_t, std::int32_t, const std::uint8_t*,
                           std::size_t, void*);
  static int on_frame_recv(nghttp2_session*, const nghttp2_frame*, void*);
  static int on_stream_close(nghttp2_session*, std::int32_t, std::uint32_t, void*);
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
  std::deque<std::shared_ptr<ClientCall>> waiting_;              // until connected
  std::map<std::int32_t, std::shared_ptr<ClientCall>> streams_;  // open streams
  // Completed calls whose request bytes a write still reads, by body.
  std::unordered_map<protocol::OutgoingBody*, std::shared_ptr<ClientCall>> parked_;
  // Scratch space of start_stream, kept to spare an allocation per call.
  std::vector<nghttp2_nv> headers_;
  std::vector<std::string> encoded_headers_;
};

}  // namespace sonic::grpc

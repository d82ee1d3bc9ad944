// One TCP connection of the tcp:// client: many calls in flight, answered in any order and
// matched by request id. Everything runs on the connection's network thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "net/call_life.hpp"
#include "net/channel.hpp"
#include "net/connection_settings.hpp"
#include "net/connector.hpp"
#include "net/frame_stream.hpp"
#include "net/keepalive.hpp"
#include "protocol/tcp_frame.hpp"
#include "sonic/detail/unique_function.hpp"
#include "sonic/options.hpp"

namespace sonic::tcp {

class ClientStream;

/// One call: a frame to send and the handler of the answer frame (`done`, which runs exactly
/// once, on the network thread).
struct TcpCall : net::CallLife<Result<protocol::tcp::Frame>>,
                 net::BookEntry<TcpCall, net::CallLife<Result<protocol::tcp::Frame>>::Done> {
  std::uint64_t id = 0;  ///< unique in the process, so unique on every connection
  protocol::tcp::OutgoingFrame frame;
  /// The "authorization" header the frame goes with (ClientOptions::bearer_token); empty
  /// when none.
  std::string authorization;
  bool wait_for_reconnect = false;

  // Progress, owned by the connection.
  std::weak_ptr<ClientStream> connection;  // the one it was submitted to
};

class ClientStream final : public net::FrameStream {
 public:
  ClientStream(asio::io_context& io, Endpoint endpoint, net::ConnectionSettings settings,
               net::ChannelEvents<TcpCall> events);

  bool usable() const { return open() && !failed_; }
  /// Resolves and connects; calls submitted meanwhile wait (bounded by connect_timeout).
  void connect();
  /// Sends the call's frame (once connected) and waits for its answer.
  void submit(std::shared_ptr<TcpCall> call);
  /// Completes the call with `why` now, and tells the server with a cancel frame when the call
  /// was sent; a later answer for it is dropped. Its outcome waits while a write reads its
  /// borrowed bytes.
  void abandon(const std::shared_ptr<TcpCall>& call, Error why);
  /// The endpoint's URL, for messages.
  const std::string& describe() const { return endpoint_.url; }
  /// Closes the connection, ending the write that still reads `call`'s bytes (net::CallLife).
  void let_go(const std::shared_ptr<TcpCall>& call, const std::string& why);
  /// Completes every call with `code` and closes the connection.
  void shutdown(StatusCode code, const std::string& why) { shutdown(Error(code, why)); }
  /// Completes every call with `why` and closes the connection.
  void shutdown(const Error& why);

 private:
  void on_connected();
  void connect_failed(const std::string& why);
  // Decides the call's outcome (net::settle): parked while a write reads its bytes.
  void complete(const std::shared_ptr<TcpCall>& call, Result<protocol::tcp::Frame> outcome);
  void fail_all(const Error& error);
  // Writes the call's frame, after a metadata frame when its credentials are not those the
  // server last heard on this connection (the first call, a rotated token, another client).
  void write_call(TcpCall& call);

  void on_frame(protocol::tcp::Frame frame) override;
  void on_lost(const std::string& why) override;
  void on_released(std::uint64_t id) override;
  void on_framing_error(const Error& error) override;

  asio::io_context& io_;
  Endpoint endpoint_;
  net::ConnectionSettings settings_;
  net::ChannelEvents<TcpCall> events_;
  net::Connector connector_;
  net::Keepalive keepalive_;
  bool connected_ = false;
  bool failed_ = false;
  bool answered_ = false;                                      // a frame arrived from the server
  std::string sent_authorization_;                             // what the last metadata frame said
  std::vector<std::shared_ptr<TcpCall>> waiting_;              // until connected
  std::map<std::uint64_t, std::shared_ptr<TcpCall>> pending_;  // sent, awaiting an answer
  std::map<std::uint64_t, std::shared_ptr<TcpCall>> parked_;   // answered, bytes still read
};

}  // namespace sonic::tcp

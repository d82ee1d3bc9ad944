// The way into every port of a server (gRPC, TCP, HTTP/REST, metrics): listen, accept, take the
// connection's slot at the port's cap (connection_room.hpp), hand the socket to the protocol's
// connection on one of the network threads, and end them all when the server stops. The
// protocol's files keep only their protocol.
#pragma once

#include <asio/ip/tcp.hpp>
#include <asio/post.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "connection_room.hpp"
#include "net/connection_set.hpp"
#include "net/listener.hpp"
#include "net/network_threads.hpp"
#include "server_context.hpp"

namespace sonic::server {

/// Whether a connection says when it waits for its client (`waiting_mark()`, `evict()`): at its
/// port's cap the one that waited longest is then closed for a newcomer (make_room()); other
/// connections (TCP's frames) are refused there.
template <typename Connection, typename = void>
struct EvictsWaiting : std::false_type {};
template <typename Connection>
struct EvictsWaiting<Connection,
                     std::void_t<decltype(std::declval<Connection&>().waiting_mark().since())>>
    : std::true_type {};

/// One port's listener and connections. `Connection` has `io_context()`, `start()` (on its
/// thread) and removes itself from connections() when it ends. Binding throws sonic::Error as
/// Server::start says; the rest is thread-safe.
template <typename Connection>
class Acceptor {
 public:
  using Set = net::ConnectionSet<Connection>;
  using IoContext = std::shared_ptr<asio::io_context>;

  /// Listens on the options' host and `port`; `count` is the connections the port shares its
  /// cap with (its own, or the server's).
  Acceptor(std::shared_ptr<ServerContext> context, net::NetworkThreads& threads, std::uint16_t port,
           std::shared_ptr<ConnectionCount> count)
      : context_(std::move(context)),
        threads_(threads),
        accept_io_(threads_.next()),
        listener_(*accept_io_, context_->options.host, port),
        count_(std::move(count)),
        connections_(std::make_shared<Set>()) {}

  /// Accepts until stop(). `make(socket, io, slot)` makes the connection (the socket's context
  /// `io`, its thread), which keeps `slot`; it is started on its thread. Past the cap, a
  /// newcomer's socket closes at once.
  template <typename Make>
  void start(Make make) {
    listener_.start([this] { return threads_.next(); },
                    [this, make = std::move(make)](asio::ip::tcp::socket socket, IoContext io) {
                      ConnectionSlot slot(*context_, count_, [this] { return room(); });
                      if (!slot) return;  // as many as allowed, none to close: this one closes
                      // An answer's last segment must not wait for the client to acknowledge
                      // the one before it (Nagle's algorithm against delayed ACKs: up to 40 ms).
                      std::error_code ignored;
                      socket.set_option(asio::ip::tcp::no_delay(true), ignored);
                      std::shared_ptr<Connection> connection =
                          make(std::move(socket), io, std::move(slot));
                      if (!connections_->add(connection)) return;  // stopping: it closes now
                      asio::post(*io, [connection] { connection->start(); });
                    });
  }

  std::uint16_t port() const { return listener_.port(); }
  /// The port's live connections (each removes itself as it ends).
  const std::shared_ptr<Set>& connections() const { return connections_; }

  /// Stops accepting and ends every connection: `end(connection)` on its thread. Returns at
  /// once; the network threads finish the work.
  template <typename End>
  void stop(End end) {
    listener_.close();
    for (auto& connection : connections_->close()) {
      auto io = connection->io_context();
      asio::post(*io, [connection, end] { end(*connection); });
    }
  }

 private:
  bool room() {
    if constexpr (EvictsWaiting<Connection>::value) {
      return make_room(*connections_);
    } else {
      return false;
    }
  }

  std::shared_ptr<ServerContext> context_;
  net::NetworkThreads& threads_;  // outlives this object (see Server::stop)
  std::shared_ptr<asio::io_context> accept_io_;
  net::Listener listener_;
  std::shared_ptr<ConnectionCount> count_;
  std::shared_ptr<Set> connections_;
};

/// The count of the server's gRPC and TCP connections, which share ServerLimits::max_connections.
inline std::shared_ptr<ConnectionCount> server_connections(
    const std::shared_ptr<ServerContext>& context) {
  return {context, &context->connections};
}

}  // namespace sonic::server

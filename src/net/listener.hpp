// The listening socket of a server: bind, listen, and an accept loop that hands each new
// connection to one of the server's network threads.
#pragma once

#include <asio.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "sonic/detail/export.hpp"

namespace sonic::net {

/// Accepts on its own io_context's thread. Thread-safe: close() may come from any thread.
class SONIC_EXPORT Listener {
 public:
  /// Chooses the context of the next connection.
  using Pick = std::function<std::shared_ptr<asio::io_context>()>;
  /// Takes an accepted connection (a socket of the picked context).
  using Accept = std::function<void(asio::ip::tcp::socket, std::shared_ptr<asio::io_context>)>;

  /// Binds `host`:`port` (an IP address; port 0 picks a free port) and listens. Throws
  /// sonic::Error: INVALID_ARGUMENT for a host that is not an IP address, UNAVAILABLE when the
  /// address cannot be bound (the message says why, e.g. "Address already in use").
  Listener(asio::io_context& io, const std::string& host, std::uint16_t port);

  /// The bound port.
  std::uint16_t port() const { return port_; }
  /// Accepts connections until close(). A failed accept (no file descriptors left) is retried
  /// after a short pause rather than ending the loop.
  void start(Pick pick, Accept accept);
  /// Stops accepting; the handler of a pending accept finds it closed.
  void close();

 private:
  void accept_next();

  asio::io_context& io_;
  asio::ip::tcp::acceptor acceptor_;
  asio::steady_timer pause_;
  std::uint16_t port_ = 0;
  Pick pick_;
  Accept accept_;
};

}  // namespace sonic::net

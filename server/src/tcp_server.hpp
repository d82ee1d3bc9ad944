// The TCP half of a server: sonic's frames (proto/tcp_framing.md), for tcp:// and tcp+zstd://.
#pragma once

#include <cstdint>
#include <memory>

#include "acceptor.hpp"

namespace sonic::server {

class TcpConnection;

/// Listens on the options' host and tcp_port; connections run on the given network threads.
class TcpServer {
 public:
  /// Binds (throws sonic::Error as Server::start says).
  TcpServer(std::shared_ptr<ServerContext> context, net::NetworkThreads& threads);
  void start();
  std::uint16_t port() const { return acceptor_.port(); }
  /// Stops accepting and closes every connection; returns at once.
  void stop();

 private:
  std::shared_ptr<ServerContext> context_;
  Acceptor<TcpConnection> acceptor_;
};

}  // namespace sonic::server

// The gRPC half of a server: KServe v2 over HTTP/2, Triton's service and extensions.
#pragma once

#include <cstdint>
#include <memory>

#include "net/connection_set.hpp"
#include "net/listener.hpp"
#include "net/network_threads.hpp"
#include "server_context.hpp"

namespace sonic::server {

class GrpcConnection;

/// Listens on the options' host and port; connections run on the given network threads.
class GrpcServer {
 public:
  /// Binds (throws sonic::Error as Server::start says).
  GrpcServer(std::shared_ptr<ServerContext> context, net::NetworkThreads& threads);
  void start();
  std::uint16_t port() const { return listener_.port(); }
  /// Stops accepting and ends every connection (GOAWAY, then close); returns at once, the
  /// network threads finish the work.
  void stop();

 private:
  std::shared_ptr<ServerContext> context_;
  net::NetworkThreads& threads_;  // outlives this object (see Server::stop)
  std::shared_ptr<asio::io_context> accept_io_;
  net::Listener listener_;
  std::shared_ptr<net::ConnectionSet<GrpcConnection>> connections_;
};

}  // namespace sonic::server

// The gRPC half of a server: KServe v2 over HTTP/2, Triton's service and extensions.
#pragma once

#include <cstdint>
#include <memory>

#include "acceptor.hpp"

namespace sonic::server {

class GrpcConnection;

/// Listens on the options' host and port; connections run on the given network threads.
class GrpcServer {
 public:
  /// Binds (throws sonic::Error as Server::start says).
  GrpcServer(std::shared_ptr<ServerContext> context, net::NetworkThreads& threads);
  void start();
  std::uint16_t port() const { return acceptor_.port(); }
  /// Stops accepting and ends every connection (GOAWAY, then close); returns at once, the
  /// network threads finish the work.
  void stop();

 private:
  std::shared_ptr<ServerContext> context_;
  Acceptor<GrpcConnection> acceptor_;
};

}  // namespace sonic::server

// The metrics port (Triton's 8002): `GET /metrics` over HTTP/1.1 answers the Prometheus page of
// metrics_text.hpp. Nothing else is served; a hostile or broken client is cut off with a bounded
// cost: see kMaxHeadBytes and the others in metrics_server.cpp, and docs/limits.md.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "metrics_text.hpp"
#include "net/connection_set.hpp"
#include "net/listener.hpp"
#include "net/network_threads.hpp"
#include "server_context.hpp"

namespace sonic::server {

class MetricsConnection;

/// What the metrics connections share: the models, the host reader, the count of connections.
struct MetricsShared {
  std::shared_ptr<ServerContext> context;
  HostUsageReader host;
  std::atomic<std::size_t> connections{0};
};

/// Listens on the options' host and metrics_port; connections run on the given network threads.
class MetricsServer {
 public:
  /// Binds (throws sonic::Error as Server::start says).
  MetricsServer(std::shared_ptr<ServerContext> context, net::NetworkThreads& threads);
  void start();
  std::uint16_t port() const { return listener_.port(); }
  /// Stops accepting and closes every connection; returns at once.
  void stop();

 private:
  std::shared_ptr<MetricsShared> shared_;
  net::NetworkThreads& threads_;  // outlives this object (see Server::stop)
  std::shared_ptr<asio::io_context> accept_io_;
  net::Listener listener_;
  std::shared_ptr<net::ConnectionSet<MetricsConnection>> connections_;
};

}  // namespace sonic::server

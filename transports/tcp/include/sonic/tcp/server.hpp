// sonic::tcp::Server — the server half of the tcp:// and tcp+zstd:// transports: the models of a
// CpuExecutor served in sonic's frames (proto/tcp_framing.md). Used by sonic-server --tcp-port.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "sonic/executor.hpp"

namespace sonic::tcp {

struct ServerOptions {
  /// Address to bind; the loopback default keeps a test or demo server private to this host.
  std::string host = "127.0.0.1";
  /// Port to bind; 0 picks a free ephemeral port (read it back with Server::port()).
  std::uint16_t port = 8010;
  /// Largest request accepted (tensor bytes), and largest response sent.
  std::size_t max_message_bytes = 0x7fffffff;
  /// zstd level for responses to clients that ask for compression.
  int zstd_level = 1;
  /// Name reported by ServerMetadata.
  std::string name = "sonic-server";
  /// Run models on the network thread instead of the executor's (see
  /// sonic::grpc::ServerOptions::inline_models).
  bool inline_models = false;
};

/// A TCP inference server. Models run on the executor's threads, where responses are also
/// encoded (and compressed); one network thread reads and writes. Thread-safe; stops on
/// destruction.
class Server {
 public:
  Server(std::shared_ptr<CpuExecutor> executor, ServerOptions options = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// Binds and starts serving. Throws sonic::Error(Unavailable) when the address cannot be bound.
  void start();
  /// The bound port (useful after binding port 0).
  std::uint16_t port() const;
  /// Closes the listener and every connection, then joins the thread. Idempotent.
  void stop();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace sonic::tcp

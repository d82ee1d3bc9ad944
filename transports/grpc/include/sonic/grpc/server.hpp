// sonic — the server half of the gRPC transport: a KServe v2 / Triton-compatible inference
// server hosting the models of a CpuExecutor. Used by sonic-server and by tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "sonic/executor.hpp"

namespace sonic::grpc {

/// How a Server listens and what it accepts.
struct ServerOptions {
  /// Address to bind; the loopback default keeps a test or demo server private to this host.
  std::string host = "127.0.0.1";
  /// Port to bind; 0 picks a free ephemeral port (read it back with Server::port()).
  std::uint16_t port = 8001;
  /// Network threads; each connection stays on one of them.
  std::size_t io_threads = 1;
  /// Largest request or response message in bytes.
  std::size_t max_message_bytes = 0x7fffffff;
  /// Concurrent streams per connection announced to clients; more are queued by the client.
  std::uint32_t max_concurrent_streams = 1024;
  /// HTTP/2 receive windows (per stream, per connection) for large tensors.
  std::uint32_t stream_window_bytes = 16u << 20;
  std::uint32_t connection_window_bytes = 256u << 20;
  /// Name reported by ServerMetadata.
  std::string name = "sonic-server";
  /// Serve Triton's shared memory extension (clients on this host place tensors in memory
  /// they share with the server). Off: its calls answer UNIMPLEMENTED.
  bool shared_memory = true;
  /// Run models on the network thread that received the request, instead of handing each
  /// request to the executor's threads and the answer back: two thread wake-ups fewer per
  /// request, for models that take microseconds. A slower model stalls every connection of
  /// its network thread meanwhile (add io_threads to spread them).
  bool inline_models = false;
};

/// A gRPC inference server. Models run on the executor's threads; control calls are answered on
/// the network threads. Thread-safe; stops on destruction.
class Server {
 public:
  Server(std::shared_ptr<CpuExecutor> executor, ServerOptions options = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// Binds and starts serving. Throws sonic::Error(Unavailable) when the address cannot be
  /// bound (the message says why, e.g. "Address already in use").
  void start();
  /// The bound port (useful after binding port 0).
  std::uint16_t port() const;
  /// Closes the listener and every connection (open calls are reset), then joins the threads.
  /// Idempotent.
  void stop();
  /// Shared memory regions clients have registered now (system and CUDA).
  std::size_t shared_memory_regions() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace sonic::grpc

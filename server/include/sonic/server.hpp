// sonic — the inference server library: the models of a CpuExecutor served over KServe v2 gRPC
// (Triton-compatible, with its shared memory extension) and, optionally, sonic's TCP framing.
// sonic-server is a thin program over it; tests and benchmarks embed it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "sonic/detail/export.hpp"
#include "sonic/executor.hpp"

namespace sonic {

/// How a Server listens and what it accepts. Every field has a default that suits a server on
/// this host for tests and demos.
struct ServerOptions {
  /// Address to bind (an IP address); the loopback default keeps the server private to this
  /// host.
  std::string host = "127.0.0.1";
  /// gRPC port; 0 picks a free ephemeral port (read it back with Server::port()).
  std::uint16_t port = 8001;
  /// Also serve tcp:// and tcp+zstd:// clients on this port (0: a free one); none when unset.
  std::optional<std::uint16_t> tcp_port;
  /// Network threads; each connection stays on one.
  std::size_t io_threads = 1;
  /// Largest request or response message in bytes.
  std::size_t max_message_bytes = 0x7fffffff;
  /// Concurrent gRPC streams per connection announced to clients; more are queued by them.
  std::uint32_t max_concurrent_streams = 1024;
  /// HTTP/2 receive windows (per stream, per connection) for large tensors.
  std::uint32_t stream_window_bytes = 16u << 20;
  std::uint32_t connection_window_bytes = 256u << 20;
  /// zstd level of responses to tcp+zstd:// clients.
  int zstd_level = 1;
  /// Name reported by ServerMetadata.
  std::string name = "sonic-server";
  /// Serve Triton's shared memory extension (clients on this host place tensors in memory they
  /// share with the server). Off: its calls answer UNIMPLEMENTED.
  bool shared_memory = true;
  /// Run models on the network thread that received the request, instead of handing each
  /// request to the executor's threads and the answer back: two thread wake-ups fewer per
  /// request, for models that take microseconds. A slower model stalls every connection of
  /// its network thread meanwhile (add io_threads to spread them).
  bool inline_models = false;
};

/// An inference server. Models run on the executor's threads (or inline, see ServerOptions);
/// control calls are answered on the network threads. Thread-safe; stops on destruction.
class SONIC_EXPORT Server {
 public:
  /// Throws sonic::Error(InvalidArgument) without an executor.
  Server(std::shared_ptr<CpuExecutor> executor, ServerOptions options = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// Binds and starts serving. Throws sonic::Error: INVALID_ARGUMENT for a host that is not an
  /// IP address, UNAVAILABLE when the address cannot be bound (the message says why, e.g.
  /// "Address already in use").
  void start();
  /// The bound gRPC port (useful after binding port 0).
  std::uint16_t port() const;
  /// The bound TCP port; 0 when the server has none.
  std::uint16_t tcp_port() const;
  /// Closes the listeners and every connection (open calls are reset), then joins the threads.
  /// Idempotent.
  void stop();
  /// Shared memory regions clients have registered now (system and CUDA).
  std::size_t shared_memory_regions() const;
  const ServerOptions& options() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace sonic

// sonic — the inference server library: the models of a CpuExecutor served over KServe v2 gRPC
// (Triton-compatible, with its shared memory extension) and, optionally, sonic's TCP framing.
// sonic-server is a thin program over it; tests and benchmarks embed it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "sonic/detail/export.hpp"
#include "sonic/executor.hpp"

namespace sonic {

/// Who may register which shared memory (Triton's shared memory extension). See
/// docs/shared-memory-security.md.
enum class SharedMemoryAccess {
  /// A client maps only POSIX shared memory objects it owns: the server learns the user of a
  /// connection from the kernel (a local peer's socket) and checks the object's owner and
  /// mode against it. Regions are visible to that user's connections only. Clients on other
  /// hosts, whose user the kernel cannot tell, get PERMISSION_DENIED.
  Owner,
  /// As Triton does: any client may register any object the server can open, and every
  /// client sees every region. Only for a server whose every client is trusted with the
  /// server's own access to memory.
  Any,
};

/// What one client may make the server hold, and for how long. Every limit is reached with a
/// clear status (RESOURCE_EXHAUSTED, or the connection closed for what a well-behaved client
/// never does) rather than a crash or unbounded memory; the defaults hold on a 2 GiB batch node.
/// See docs/limits.md.
struct ServerLimits {
  /// Open connections (gRPC and TCP together); the next one is closed at once.
  std::size_t max_connections = 4096;
  /// Bytes held for all clients: messages arriving, requests waiting for or in a model,
  /// answers not yet written. A message begins to be read only when its declared length fits
  /// beside what is held and promised; until then its client waits (gRPC flow control, TCP
  /// backpressure), so every message begun can finish. At least max_message_bytes.
  std::size_t max_buffered_bytes = std::size_t{1} << 30;
  /// The same, per connection; at least max_message_bytes.
  std::size_t max_connection_buffered_bytes = std::size_t{512} << 20;
  /// HTTP/2 header list of one request (names, values and 32 bytes per field, as RFC 9113
  /// counts them); a client that sends more has its connection closed.
  std::size_t max_header_list_bytes = 16 << 10;
  /// A new connection must have sent the HTTP/2 preface and SETTINGS (or a complete TCP frame)
  /// within this.
  std::chrono::milliseconds handshake_timeout{10000};
  /// A connection with no call under way for this long is closed (GOAWAY first); 0: never.
  std::chrono::milliseconds idle_timeout{600000};
  /// A connection whose client stops sending in the middle of a message, or stops reading
  /// the answers, for this long is closed.
  std::chrono::milliseconds stall_timeout{30000};
  /// Shared memory regions registered over all connections, and over one.
  std::size_t max_shm_regions = 1024;
  std::size_t max_connection_shm_regions = 64;
  /// Bytes of shared memory mapped for all connections, and for one (address space, not
  /// memory: the pages are the clients').
  std::uint64_t max_shm_bytes = std::uint64_t{64} << 30;
  std::uint64_t max_connection_shm_bytes = std::uint64_t{16} << 30;
};

/// TLS of a server's ports (both, when it has two): grpcs:// on the gRPC port, tcp+tls:// and
/// tcp+zstd+tls:// on the TCP port. TLS 1.2 or later; the gRPC port offers HTTP/2 through ALPN,
/// as gRPC clients require. A server with TLS serves no plaintext.
struct ServerTlsOptions {
  /// The server's certificate chain and private key (PEM files). Both empty: no TLS.
  std::string cert_file;
  std::string key_file;
  /// Certificate authorities (a PEM file) that must have signed a client certificate: set, every
  /// client must present one (mutual TLS) or its handshake fails.
  std::string client_ca_file;
};

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
  /// Serve Prometheus metrics with Triton's names (GET /metrics, as Triton's metrics port) on
  /// this port: 0 picks a free one (read it back with Server::metrics_port()); -1 (the default):
  /// none. See docs/limits.md for what the port holds.
  int metrics_port = -1;
  /// Serve KServe v2 over HTTP/REST (Triton's HTTP port: health, metadata, inference with JSON
  /// and binary tensors) on this port: 0 picks a free one (read it back with
  /// Server::http_port()); -1 (the default): none. See docs/limits.md for what it holds.
  int http_port = -1;
  /// Network threads; each connection stays on one.
  std::size_t io_threads = 1;
  /// Largest request or response message in bytes (decoded size, for zstd tensors).
  std::size_t max_message_bytes = std::size_t{512} << 20;
  /// A compressed request (a gRPC message with grpc-encoding gzip or deflate, an HTTP body with
  /// that Content-Encoding) may inflate to at most this many times its compressed size, or to
  /// 1 MiB whatever its ratio; past it, it is refused INVALID_ARGUMENT (HTTP 400) as soon as its
  /// inflated bytes pass the bound, before the rest is inflated. Tensors of real data compress
  /// 1 to 15 times (float activations and images 1 to 3, padded token ids 13) and sparse ones
  /// about 100 times (1.5% non-zero); a 16 MiB tensor of zeros 1028 times, deflate's most: a
  /// bomb (docs/limits.md). 1032 or more: no bound but max_message_bytes.
  std::size_t max_inflate_ratio = 256;
  /// Concurrent gRPC streams per connection announced to clients; more are refused.
  std::uint32_t max_concurrent_streams = 1024;
  /// HTTP/2 receive window per connection: request bytes a client may have on the way at once
  /// (throughput over long links needs bandwidth × round trip). Memory is bounded by the
  /// limits' admission of messages, not by this.
  std::uint32_t connection_window_bytes = 16u << 20;
  /// zstd level of responses to tcp+zstd:// clients.
  int zstd_level = 1;
  /// Compression of ModelInfer responses to gRPC clients that accept it, as Triton's
  /// --grpc-infer-response-compression-level: None (the default), or Low, Medium, High,
  /// which choose the algorithm as gRPC core does (Low: gzip; Medium and High: deflate;
  /// whichever the client accepts). Requests come compressed or not as each client chooses.
  enum class ResponseCompression : std::uint8_t { None, Low, Medium, High };
  ResponseCompression infer_response_compression = ResponseCompression::None;
  /// Name reported by ServerMetadata.
  std::string name = "sonic-server";
  /// Serve Triton's shared memory extension (clients on this host place tensors in memory they
  /// share with the server). Off: its calls answer UNIMPLEMENTED.
  bool shared_memory = true;
  /// Who may register which shared memory.
  SharedMemoryAccess shared_memory_access = SharedMemoryAccess::Owner;
  /// Run models on the network thread that received the request, instead of handing each
  /// request to the executor's threads and the answer back: two thread wake-ups fewer per
  /// request, for models that take microseconds. A slower model stalls every connection of
  /// its network thread meanwhile (add io_threads to spread them).
  bool inline_models = false;
  /// Without inline_models, a model whose recent executions took less than this each (a moving
  /// mean) still runs on the network thread (CpuExecutor::infer_if_quick): small models cost
  /// half the CPU per request that way. A model that turns slow holds its network thread for
  /// one execution, after which its requests go to the executor's threads again; models that
  /// batch, keep sequences or answer through a stream always do, and so do requests of more
  /// than CpuExecutor::kQuickInputBytes (256 KiB). 0: every request goes to the executor's
  /// threads.
  std::chrono::microseconds quick_model_budget{20};
  /// Refuse at once, retryably, a request that its model cannot answer before its caller's
  /// deadline: when the requests already under way on the model, at the model's recent
  /// execution time, would keep it waiting past the time the request has left
  /// (CpuExecutor::admit()). It is answered UNAVAILABLE with the reason WOULD_MISS_DEADLINE
  /// while its client still has time for another server or its fallback, instead of waiting
  /// in vain. Requests without a deadline are never refused. On by default: it costs a request
  /// a lookup and a few atomic operations (docs/overload.md measures it). Every request, shed
  /// or not, is answered unrun once its caller went away (cancelled, or past its deadline).
  bool shed_early = true;
  /// Let clients unload and load models (RepositoryModelUnload, RepositoryModelLoad), as
  /// Triton's --model-control-mode=explicit. Off, as Triton's default: those calls answer
  /// UNAVAILABLE, so that no client can take a model out of service for the others.
  bool model_control = false;
  /// As Triton's --strict-readiness (on by default there too): ServerReady answers true only
  /// while every model the server was to serve is READY (one out of service because a client
  /// unloaded it, or never asked to load in explicit mode, does not count), so that a load
  /// balancer or a Kubernetes readiness probe sends no traffic to a server whose models failed
  /// to load. Off: ServerReady is true once the server listens (Triton's "live and ready to
  /// take requests").
  bool strict_readiness = true;
  /// Require a bearer token on every call: "authorization: Bearer TOKEN" (gRPC metadata; a
  /// metadata frame on tcp://), TOKEN being this file's text without the whitespace around
  /// it, read again when the file changes (as sonic::TokenFile). Calls without it are answered
  /// UNAUTHENTICATED as soon as their headers arrive, before any of their message is read.
  /// Empty: no check. Server construction throws sonic::Error(InvalidArgument) when the file
  /// cannot be read.
  std::string auth_token_file;
  /// TLS on both ports; server construction throws sonic::Error(InvalidArgument) when a file
  /// cannot be read or the key does not match the certificate.
  ServerTlsOptions tls;
  /// What one client may make the server hold.
  ServerLimits limits;
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
  /// The bound metrics port; 0 when the server has none.
  std::uint16_t metrics_port() const;
  /// The bound HTTP/REST port; 0 when the server has none.
  std::uint16_t http_port() const;
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

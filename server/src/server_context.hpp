// What every part of a server shares: the models, the options, the shared memory registry, the
// memory budget and the count of gRPC and TCP connections. Connections hold it, so it outlives them
// whatever the order of shutdown.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "authenticator.hpp"
#include "memory_budget.hpp"
#include "model_files.hpp"
#include "net/tls.hpp"
#include "settings_service.hpp"
#include "shm_registry.hpp"
#include "sonic/executor.hpp"
#include "sonic/server.hpp"

namespace sonic::server {

/// The connections one or more ports hold, and how many they may. Thread-safe.
struct ConnectionCount {
  explicit ConnectionCount(std::size_t most) : limit(most) {}
  const std::size_t limit;
  std::atomic<std::size_t> open{0};
};

struct ServerContext {
  /// The context of one port's TLS, or null when `tls` names no certificate. Throws
  /// sonic::Error(InvalidArgument) when a file cannot be used.
  static std::shared_ptr<net::TlsContext> tls_context(const ServerTlsOptions& tls,
                                                      net::TlsPurpose purpose) {
    if (tls.cert_file.empty() && tls.key_file.empty() && tls.client_ca_file.empty()) return {};
    auto context =
        net::server_tls_context(tls.cert_file, tls.key_file, tls.client_ca_file, purpose);
    if (!context) throw context.error();
    return std::move(*context);
  }

  ServerContext(std::shared_ptr<CpuExecutor> exec, ServerOptions opts)
      : executor(std::move(exec)),
        options(std::move(opts)),
        shared_memory(options.shared_memory_access, options.limits),
        memory(std::make_shared<MemoryBudget>(options.limits.max_buffered_bytes)),
        authenticator(options.auth_token_file),
        grpc_tls(tls_context(options.tls, net::TlsPurpose::kGrpc)),
        tcp_tls(tls_context(options.tls, net::TlsPurpose::kFrames)),
        model_files(options.max_message_bytes),
        connections(options.limits.max_connections) {}

  std::shared_ptr<CpuExecutor> executor;
  const ServerOptions options;
  SharedMemoryRegistry shared_memory;
  std::shared_ptr<MemoryBudget> memory;
  Authenticator authenticator;
  /// The TLS of each port; null without (ServerOptions::tls).
  const std::shared_ptr<net::TlsContext> grpc_tls;
  const std::shared_ptr<net::TlsContext> tcp_tls;
  /// The files of loads that send them (RepositoryModelLoad's "file:" parameters), removed
  /// with the server.
  ModelFiles model_files;
  /// The log and trace settings LogSettings and TraceSetting read and change.
  ServerSettings settings;
  ConnectionCount connections;  // of the gRPC and TCP ports together
  std::atomic<std::uint64_t> next_connection_id{1};
};

/// A connection's place among those of its port (or ports): taken when it is accepted, given
/// back when it is destroyed. Empty when they are as many as allowed.
class ConnectionSlot {
 public:
  ConnectionSlot() = default;
  /// `count` (kept alive by the slot): the ports' connections. `room`: called at the limit,
  /// true when a connection was chosen to close and make room (connection_room.hpp): the slot
  /// is then taken beyond the limit until that one ends.
  template <typename MakeRoom>
  ConnectionSlot(ServerContext& context, std::shared_ptr<ConnectionCount> count, MakeRoom room) {
    if (count->open.fetch_add(1, std::memory_order_relaxed) >= count->limit && !room()) {
      count->open.fetch_sub(1, std::memory_order_relaxed);
      return;
    }
    count_ = std::move(count);
    id_ = context.next_connection_id.fetch_add(1, std::memory_order_relaxed);
  }
  ~ConnectionSlot() {
    if (count_) count_->open.fetch_sub(1, std::memory_order_relaxed);
  }
  ConnectionSlot(ConnectionSlot&& other) noexcept
      : count_(std::move(other.count_)), id_(other.id_) {}
  ConnectionSlot& operator=(ConnectionSlot&&) = delete;
  ConnectionSlot(const ConnectionSlot&) = delete;
  ConnectionSlot& operator=(const ConnectionSlot&) = delete;

  explicit operator bool() const noexcept { return count_ != nullptr; }
  /// Unique per connection in the process.
  std::uint64_t id() const noexcept { return id_; }

 private:
  std::shared_ptr<ConnectionCount> count_;
  std::uint64_t id_ = 0;
};

}  // namespace sonic::server

// sonic — what a client's connection is made with, and hence whether two clients may share one.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>

#include "net/tls.hpp"
#include "sonic/detail/export.hpp"
#include "sonic/options.hpp"

namespace sonic::net {

/// The settings of ClientOptions that a connection itself uses, as opposed to each call on it
/// (timeouts, headers, compression and credentials travel with the call). Clients of the
/// process share a connection to an endpoint only when all of these agree: the transports
/// take their sharing key from here alone.
struct ConnectionSettings {
  std::chrono::milliseconds connect_timeout{};
  std::chrono::milliseconds keepalive_interval{};
  std::chrono::milliseconds keepalive_timeout{};
  std::chrono::milliseconds reconnect_backoff{};
  std::chrono::milliseconds reconnect_backoff_max{};
  std::uint32_t stream_window_bytes = 0;      ///< HTTP/2 (grpc://)
  std::uint32_t connection_window_bytes = 0;  ///< HTTP/2 (grpc://)
  std::size_t max_message_bytes = 0;          ///< sonic's frames (tcp://), HTTP bodies
  std::size_t http_connections = 0;           ///< connections per endpoint (http://)
  std::shared_ptr<TlsContext> tls;            ///< null: plaintext

  /// The settings of `options`, with `tls` for a TLS scheme.
  SONIC_EXPORT static ConnectionSettings of(const ClientOptions& options,
                                            std::shared_ptr<TlsContext> tls);

  /// Every field above, in order: sharing_key() reads them from here, and a test checks that
  /// this names them all.
  auto fields() const {
    return std::tie(connect_timeout, keepalive_interval, keepalive_timeout, reconnect_backoff,
                    reconnect_backoff_max, stream_window_bytes, connection_window_bytes,
                    max_message_bytes, http_connections, tls);
  }

  /// What the process's clients of `endpoint` (host and port) with these settings share one
  /// connection under.
  SONIC_EXPORT std::string sharing_key(const std::string& endpoint) const;
};

}  // namespace sonic::net

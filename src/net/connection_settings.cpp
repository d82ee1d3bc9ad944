// sonic — a connection's settings and the key clients share it under.
#include "net/connection_settings.hpp"

#include <utility>

namespace sonic::net {
namespace {

std::string text_of(std::chrono::milliseconds value) { return std::to_string(value.count()); }
std::string text_of(std::uint64_t value) { return std::to_string(value); }
std::string text_of(const std::shared_ptr<TlsContext>& tls) { return tls ? "tls " + tls->key : ""; }

}  // namespace

ConnectionSettings ConnectionSettings::of(const ClientOptions& options,
                                          std::shared_ptr<TlsContext> tls) {
  ConnectionSettings settings;
  settings.connect_timeout = options.connect_timeout;
  settings.keepalive_interval = options.keepalive_interval;
  settings.keepalive_timeout = options.keepalive_timeout;
  settings.reconnect_backoff = options.reconnect_backoff;
  settings.reconnect_backoff_max = options.reconnect_backoff_max;
  settings.stream_window_bytes = options.stream_window_bytes;
  settings.connection_window_bytes = options.connection_window_bytes;
  settings.max_message_bytes = options.max_message_bytes;
  settings.http_connections = options.http_connections;
  settings.tls = std::move(tls);
  return settings;
}

std::string ConnectionSettings::sharing_key(const std::string& endpoint) const {
  std::string key = endpoint;
  std::apply(
      [&key](const auto&... field) {
        // One line per field; the TLS context's key, which may hold line breaks, comes last.
        ((key += '\n', key += text_of(field)), ...);
      },
      fields());
  return key;
}

}  // namespace sonic::net

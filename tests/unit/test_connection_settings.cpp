// Whether two clients share a connection is decided by net::ConnectionSettings alone: every
// setting a connection is made with is part of the sharing key, so clients whose settings
// differ never share sockets. The two structured bindings below are tripwires: a field added
// to ConnectionSettings, or an option added to ClientOptions, stops this file from compiling
// until its author says here whether the connection uses it.
#include <doctest/doctest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "net/connection_settings.hpp"
#include "sonic/options.hpp"

using sonic::ClientOptions;
using sonic::net::ConnectionSettings;
using namespace std::chrono_literals;

TEST_CASE("fields() names every field of ConnectionSettings") {
  ConnectionSettings settings;
  // A new field makes this binding ill-formed: add it to fields() and to the changes below.
  auto& [connect, interval, timeout, backoff, backoff_max, stream_window, connection_window,
         max_message, http_connections, tls] = settings;
  (void)connect, (void)interval, (void)timeout, (void)backoff, (void)backoff_max;
  (void)stream_window, (void)connection_window, (void)max_message, (void)http_connections,
      (void)tls;
  static_assert(std::tuple_size_v<decltype(settings.fields())> == 10);
}

TEST_CASE("each connection setting alone changes the sharing key") {
  const ConnectionSettings base = ConnectionSettings::of(ClientOptions{}, nullptr);
  const std::vector<std::function<void(ConnectionSettings&)>> changes = {
      [](ConnectionSettings& s) { s.connect_timeout += 1ms; },
      [](ConnectionSettings& s) { s.keepalive_interval += 1ms; },
      [](ConnectionSettings& s) { s.keepalive_timeout += 1ms; },
      [](ConnectionSettings& s) { s.reconnect_backoff += 1ms; },
      [](ConnectionSettings& s) { s.reconnect_backoff_max += 1ms; },
      [](ConnectionSettings& s) { s.stream_window_bytes += 1; },
      [](ConnectionSettings& s) { s.connection_window_bytes += 1; },
      [](ConnectionSettings& s) { s.max_message_bytes += 1; },
      [](ConnectionSettings& s) { s.http_connections += 1; },
      [](ConnectionSettings& s) { s.tls = std::make_shared<sonic::net::TlsContext>(); },
  };
  REQUIRE(changes.size() == std::tuple_size_v<decltype(base.fields())>);
  const std::string key = base.sharing_key("127.0.0.1:8001");
  CHECK(key == ConnectionSettings(base).sharing_key("127.0.0.1:8001"));
  CHECK(key != base.sharing_key("127.0.0.1:8002"));
  for (std::size_t i = 0; i < changes.size(); ++i) {
    ConnectionSettings changed = base;
    changes[i](changed);
    CAPTURE(i);
    CHECK(changed.sharing_key("127.0.0.1:8001") != key);
  }
  // Two TLS contexts made for different options differ by their key.
  ConnectionSettings a = base, b = base;
  a.tls = std::make_shared<sonic::net::TlsContext>();
  b.tls = std::make_shared<sonic::net::TlsContext>();
  b.tls->key = "another CA";
  CHECK(a.sharing_key("h:1") != b.sharing_key("h:1"));
}

TEST_CASE("the client options a connection is made with reach its settings") {
  const std::string key = ConnectionSettings::of(ClientOptions{}, nullptr).sharing_key("h:1");
  const std::vector<std::function<void(ClientOptions&)>> connection_options = {
      [](ClientOptions& o) { o.connect_timeout += 1ms; },
      [](ClientOptions& o) { o.keepalive_interval += 1ms; },
      [](ClientOptions& o) { o.keepalive_timeout += 1ms; },
      [](ClientOptions& o) { o.reconnect_backoff += 1ms; },
      [](ClientOptions& o) { o.reconnect_backoff_max += 1ms; },
      [](ClientOptions& o) { o.stream_window_bytes += 1; },
      [](ClientOptions& o) { o.connection_window_bytes += 1; },
      [](ClientOptions& o) { o.max_message_bytes -= 1; },
      [](ClientOptions& o) { o.http_connections += 1; },
  };
  for (std::size_t i = 0; i < connection_options.size(); ++i) {
    ClientOptions options;
    connection_options[i](options);
    CAPTURE(i);
    CHECK(ConnectionSettings::of(options, nullptr).sharing_key("h:1") != key);
  }

  // Every option of ClientOptions, and where it acts. A new option makes this binding
  // ill-formed: if a connection is made with it, add it to ConnectionSettings (and above);
  // otherwise name it here with where it acts.
  ClientOptions options;
  auto& [endpoints,                               // the client's endpoint pool
         resolution,                              // the endpoint pool's name lookups
         compression,                             // each call
         shared_memory,                           // the grpc+shm:// transport, per call
         tls,                                     // the TLS context: ConnectionSettings::tls
         retry, breaker, routing,                 // the client's attempts and endpoint choice
         fallback, fallback_latency_budget, log,  // the client
         default_timeout, control_timeout,        // each call's deadline
         max_in_flight,                           // the client's admission of a request
         connect_timeout, reconnect_backoff, reconnect_backoff_max, keepalive_interval,
         keepalive_timeout, max_message_bytes, stream_window_bytes, connection_window_bytes,
         http_connections,                        // ConnectionSettings
         share_connections,                       // whether the key is used at all
         drive_blocking_calls,                    // the transport: a channel per waiting thread
         network_threads,                         // the process's network threads
         batching, validate_inputs,               // the client
         headers, bearer_token,                   // each call's metadata
         callbacks, callback_threads] = options;  // the client's callbacks
  (void)endpoints, (void)resolution, (void)compression, (void)shared_memory, (void)tls;
  (void)retry, (void)breaker, (void)routing, (void)fallback, (void)fallback_latency_budget;
  (void)log, (void)default_timeout, (void)control_timeout, (void)max_in_flight;
  (void)connect_timeout;
  (void)reconnect_backoff, (void)reconnect_backoff_max, (void)keepalive_interval;
  (void)keepalive_timeout, (void)max_message_bytes, (void)stream_window_bytes;
  (void)connection_window_bytes, (void)http_connections, (void)share_connections,
      (void)drive_blocking_calls;
  (void)network_threads;
  (void)batching, (void)validate_inputs, (void)headers, (void)bearer_token, (void)callbacks;
  (void)callback_threads;
}

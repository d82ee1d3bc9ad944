// The timeouts of a server connection (ServerLimits): a client must finish its handshake, must
// not leave a connection idle forever, and must not stall in the middle of a message or stop
// reading its answers. Each connection keeps its activity and checks it on a timer.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include "sonic/server.hpp"

namespace sonic::server {

using WatchClock = std::chrono::steady_clock;

/// What a connection has seen of its client. Updated on the connection's thread.
struct ConnectionActivity {
  WatchClock::time_point accepted = WatchClock::now();
  WatchClock::time_point last_read = accepted;  ///< bytes arrived (or the server held them back)
  WatchClock::time_point last_busy = accepted;  ///< a call was under way
  bool handshake_done = false;
};

/// What a connection is doing now.
struct ConnectionState {
  bool busy = false;                  ///< calls under way
  bool mid_message = false;           ///< a message has begun arriving and not ended
  std::size_t unwritten = 0;          ///< bytes waiting for the socket
  WatchClock::time_point last_write;  ///< when the socket last took bytes
};

/// A connection that must end now, and why.
struct Overdue {
  std::string why;
  /// Idle, not misbehaving: end it politely (GOAWAY first) rather than drop it.
  bool idle = false;
};

/// Whether the connection must end now.
std::optional<Overdue> overdue(const ConnectionActivity& activity, const ConnectionState& state,
                               const ServerLimits& limits, WatchClock::time_point now);

/// How often a connection checks: a quarter of its shortest timeout, within 50 ms and 1 s.
std::chrono::milliseconds watch_interval(const ServerLimits& limits);

}  // namespace sonic::server

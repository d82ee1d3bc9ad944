// Keepalive pings of a client connection: while calls wait for answers, a ping every interval;
// one unanswered for the timeout declares the connection dead. An idle connection is never
// pinged (gRPC servers, Triton included, penalise pings on connections where they send nothing).
#pragma once

#include <asio.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "sonic/detail/export.hpp"

namespace sonic::net {

/// Runs on the connection's thread; not thread-safe.
class SONIC_EXPORT Keepalive {
 public:
  /// What the connection does for its keepalive.
  struct Hooks {
    std::function<bool()> busy;                    ///< calls are waiting for answers
    std::function<void()> send_ping;               ///< sends one ping
    std::function<void(const std::string&)> dead;  ///< the peer did not answer in time
  };

  /// A zero interval disables keepalive.
  Keepalive(asio::io_context& io, std::chrono::milliseconds interval,
            std::chrono::milliseconds timeout)
      : timer_(io), interval_(interval), timeout_(timeout) {}

  /// Installs the hooks; `owner` (who owns this object) is kept alive by the pending timer.
  void start(std::weak_ptr<void> owner, Hooks hooks) {
    owner_ = std::move(owner);
    hooks_ = std::move(hooks);
  }
  /// A call started: arms the timer unless it is armed already.
  void activity();
  /// The peer answered a ping.
  void pong() { ping_outstanding_ = false; }
  /// No more pings (the connection is closing).
  void stop() {
    stopped_ = true;
    timer_.cancel();
  }

 private:
  asio::steady_timer timer_;
  std::chrono::milliseconds interval_, timeout_;
  std::weak_ptr<void> owner_;
  Hooks hooks_;
  bool armed_ = false;
  bool stopped_ = false;
  bool ping_outstanding_ = false;
  std::chrono::steady_clock::time_point ping_sent_;
};

}  // namespace sonic::net

// Room for a newcomer at a port's connection cap. Connections that never finish a request (a
// flood of sockets that open and stall) would otherwise hold every slot until their timeout,
// and a real client, a Prometheus scrape say, would be refused exactly when it matters. At the
// cap, the connection that has waited longest for a request its client never completed is
// closed to make room; when every connection is serving one, the newcomer is refused as before.
#pragma once

#include <asio/post.hpp>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

#include "net/connection_set.hpp"

namespace sonic::server {

/// Since when a connection has waited for its client to complete a request (an HTTP request
/// head; a gRPC call's headers), or that it is serving one. Thread-safe: the connection marks
/// it on its thread, an acceptor claims it on its own; a claim and the connection's next
/// request race through one compare-and-swap, so that exactly one of them wins.
class WaitingMark {
 public:
  /// Waiting since now (a connection starts so).
  WaitingMark() : since_(now()) {}

  /// Waiting from now on, unless it waits already (the earlier time stays) or was claimed.
  void waiting() noexcept {
    std::int64_t serving = 0;
    since_.compare_exchange_strong(serving, now(), std::memory_order_relaxed);
  }
  /// A request arrived: no longer a candidate. False when an acceptor claimed the connection
  /// first: it must close (it was chosen to make room) and not serve the request.
  bool serving() noexcept {
    std::int64_t since = since_.load(std::memory_order_relaxed);
    while (since != 0) {
      if (since == kClaimed) return false;
      if (since_.compare_exchange_weak(since, 0, std::memory_order_relaxed)) return true;
    }
    return true;
  }
  /// The steady clock's ticks since it waits; 0 while it serves or once claimed.
  std::int64_t since() const noexcept {
    const std::int64_t since = since_.load(std::memory_order_relaxed);
    return since > 0 ? since : 0;
  }
  /// Takes the connection to close it, if it still waits since `since`.
  bool claim(std::int64_t since) noexcept {
    return since > 0 && since_.compare_exchange_strong(since, kClaimed, std::memory_order_relaxed);
  }

 private:
  static constexpr std::int64_t kClaimed = -1;
  static std::int64_t now() noexcept {
    const auto ticks = std::chrono::steady_clock::now().time_since_epoch().count();
    return ticks > 0 ? static_cast<std::int64_t>(ticks) : 1;
  }
  std::atomic<std::int64_t> since_;  // >0: waiting since; 0: serving; kClaimed: to be closed
};

/// At a port's cap: claims the connection of `set` that has waited longest for a request and
/// posts its closing (`Connection::evict()`, on its thread); true when one was claimed, and the
/// newcomer may take its place. `Connection` has `waiting_mark()` and `io_context()`. Costs a
/// pass over the set, at the cap only. Thread-safe.
template <typename Connection>
bool make_room(net::ConnectionSet<Connection>& set) {
  // A candidate that starts serving between the pass and the claim is passed over.
  for (int attempt = 0; attempt < 4; ++attempt) {
    std::shared_ptr<Connection> oldest;
    std::int64_t oldest_since = 0;
    set.for_each([&](const std::shared_ptr<Connection>& connection) {
      const std::int64_t since = connection->waiting_mark().since();
      if (since > 0 && (!oldest || since < oldest_since)) {
        oldest = connection;
        oldest_since = since;
      }
    });
    if (!oldest) return false;
    if (oldest->waiting_mark().claim(oldest_since)) {
      auto io = oldest->io_context();
      asio::post(*io, [oldest = std::move(oldest)] { oldest->evict(); });
      return true;
    }
  }
  return false;
}

}  // namespace sonic::server

// The network threads every client of a process shares: a few lanes, each an asio::io_context
// run by one thread, over which all connections are spread (each stays on its lane). A lane's
// thread also runs its clients' completion callbacks after its I/O (detail::CallbackHost); a
// callback that holds it too long makes the lane move to a fresh thread.
#pragma once

#include <asio.hpp>

#include <chrono>
#include <cstddef>
#include <memory>

#include "client/callback_host.hpp"
#include "sonic/detail/export.hpp"

namespace sonic::net {

/// Thread-safe. Lanes start as connections need them, up to a limit; their threads stop once
/// the last holder of the pool lets go and their work is done. Destroying the pool from one of
/// its own threads is safe (that thread finishes on its own).
class SONIC_EXPORT NetworkThreads {
 public:
  /// How often a watcher looks at lanes whose thread runs a callback, while callbacks run: a
  /// callback seen running at two looks in a row (so for one to two ticks) makes its lane move
  /// to a fresh thread. The watcher sleeps while no callback has run for 100 ticks.
  static constexpr std::chrono::microseconds kCallbackTick = sonic::detail::kCallbackTick;

  /// The process's pool. `max_threads` raises its limit (never lowers it): the pool grows to
  /// the largest any caller asked for (0 asks for the default, 2).
  static std::shared_ptr<NetworkThreads> shared(std::size_t max_threads = 0);

  explicit NetworkThreads(std::size_t max_threads);
  ~NetworkThreads();
  NetworkThreads(const NetworkThreads&) = delete;
  NetworkThreads& operator=(const NetworkThreads&) = delete;

  /// The context for a new connection: a new lane while below the limit, else the next one in
  /// turn. The context lives as long as the returned pointer.
  std::shared_ptr<asio::io_context> next();
  /// Lanes started so far.
  std::size_t size() const;

  struct State;  // shared with the lanes' threads, which may outlive this object

 private:
  std::shared_ptr<State> state_;
};

}  // namespace sonic::net

// sonic — a network thread's offer to run completion callbacks itself, after its I/O.
#pragma once

#include <chrono>

#include "sonic/detail/export.hpp"
#include "sonic/detail/unique_function.hpp"

namespace sonic::detail {

/// The "short budget" below, one figure for both sides: how often a host's watcher looks at a
/// thread that runs a callback (seen running at two looks in a row, the callback has held the
/// thread one to two ticks, and its connections move), and how long a client's callbacks may
/// take to count as quick once it has moved them to the callback threads.
inline constexpr std::chrono::microseconds kCallbackTick{1000};

/// A thread that completes requests (a network thread) and can run their callbacks once it is
/// done with its sockets for the moment, instead of waking a callback thread for each: that
/// wake-up was a third of a small request's client CPU. The thread's connections never wait on
/// a callback for long: a callback that runs past a short budget, or that is about to block,
/// makes the host hand its connections to a fresh thread while the callback finishes on this
/// one. Implemented by the network threads (src/net); the client core sees only this.
class CallbackHost {
 public:
  /// The host running on this thread; null on any other thread. Default visibility: one
  /// pointer per thread across every library of the process.
  SONIC_EXPORT static CallbackHost*& current() {
    thread_local CallbackHost* host = nullptr;
    return host;
  }

  /// Runs `callback` on this host's connections' thread after the handler now running has
  /// returned: never inside the caller. Thread-safe; called on the host's own thread.
  virtual void run_later(UniqueFunction<void()> callback) = 0;
  /// The running callback is about to block (a blocking sonic call): hands the connections to
  /// a fresh thread at once, rather than after the budget. Called inside a callback this host
  /// runs, on its thread.
  virtual void hand_off_now() = 0;
  /// Whether this thread has handed its connections on (it is finishing a long callback and
  /// runs nothing after it). Called on the host's own thread.
  virtual bool handed_off() const = 0;

 protected:
  ~CallbackHost() = default;
};

}  // namespace sonic::detail

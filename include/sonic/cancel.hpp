// sonic — cancelling a call that is under way: the signal between who started it and who runs it.
#pragma once

#include <memory>
#include <mutex>
#include <utility>

#include "sonic/detail/unique_function.hpp"

namespace sonic {

/// Connects the owner of a call, which may cancel it, with the transport running it, which
/// knows how to stop it (a stream reset on the wire, a frame to the server).
///
/// Thread-safe. The stop action runs at most once, on the thread that calls cancel(), or on the
/// thread that installs it when cancel() came first. It must therefore be short and must not
/// complete the call inline on that thread: transports post it to their own thread.
class CancelSignal {
 public:
  /// Asks for the call to stop. True for the first request, false when already asked.
  bool cancel() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (cancelled_) return false;
    cancelled_ = true;
    // Run under the lock, so that disarm() can promise the action is over when it returns.
    auto action = std::move(action_);
    if (action) action();
    return true;
  }

  /// Drops the stop action once the call completed: when this returns, the action is not running
  /// and never will, so whatever it refers to may go away.
  void disarm() {
    std::lock_guard<std::mutex> lock(mutex_);
    action_ = nullptr;
  }

  bool cancelled() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return cancelled_;
  }

  /// Installed by the transport once the call is under way; replaces an earlier action. Runs
  /// `action` at once when cancel() was already called.
  void on_cancel(detail::UniqueFunction<void()> action) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!cancelled_) {
        action_ = std::move(action);
        return;
      }
    }
    action();
  }

 private:
  mutable std::mutex mutex_;
  bool cancelled_ = false;
  detail::UniqueFunction<void()> action_;
};

}  // namespace sonic

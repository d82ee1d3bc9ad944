// A client stream's flow control: responses the caller has not yet let go of hold the stream's
// HTTP/2 window closed, so that a slow callback holds the server back instead of letting
// responses pile up in the client.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>

namespace sonic::grpc {

/// Bytes of a stream's responses handed to the caller and not yet dropped, against a limit.
/// The network thread asks hold_back() before it gives a received chunk's bytes back to the
/// stream's window; while it is over the limit it keeps them, and `reopen` runs once enough
/// responses were dropped (on the thread that dropped the last of them). Thread-safe.
class StreamWindow : public std::enable_shared_from_this<StreamWindow> {
 public:
  StreamWindow(std::size_t limit, std::function<void()> reopen)
      : limit_(limit), reopen_(std::move(reopen)) {}

  /// A response of `bytes` goes to the caller: they count until the returned hold is dropped.
  std::shared_ptr<const void> hold(std::size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      held_ += bytes;
    }
    auto self = shared_from_this();
    return std::shared_ptr<const void>(nullptr,
                                       [self, bytes](const void*) { self->release(bytes); });
  }

  /// True while the responses held are over the limit: the caller keeps its window closed and
  /// is told by `reopen` when it may open it.
  bool hold_back() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (held_ <= limit_) return false;
    reopen_wanted_ = true;
    return true;
  }

  /// The stream ended: `reopen` never runs again.
  void detach() {
    std::lock_guard<std::mutex> lock(mutex_);
    reopen_ = nullptr;
  }

 private:
  void release(std::size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    held_ -= bytes;
    if (reopen_wanted_ && held_ <= limit_ && reopen_) {
      reopen_wanted_ = false;
      reopen_();  // under the lock, so that detach() cannot pass it by
    }
  }

  const std::size_t limit_;
  std::mutex mutex_;
  std::size_t held_ = 0;
  bool reopen_wanted_ = false;
  std::function<void()> reopen_;
};

}  // namespace sonic::grpc

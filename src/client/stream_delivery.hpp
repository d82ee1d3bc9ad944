// sonic — a stream's responses handed to its callback: one at a time, in order, on the callback
// threads, and how the stream ended.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "client/thread_pool.hpp"
#include "sonic/error.hpp"
#include "sonic/stream.hpp"

namespace sonic {

namespace detail {

/// Hands a stream's responses from the transport's thread to the callback threads, in order
/// and one at a time, then its end. Thread-safe.
class StreamDelivery {
 public:
  /// `threw` gets what the callback throws (it must not throw itself).
  StreamDelivery(StreamCallback callback, std::shared_ptr<ThreadPool> pool,
                 std::function<void(std::exception_ptr)> threw)
      : callback_(std::move(callback)), pool_(std::move(pool)), threw_(std::move(threw)) {}

  static void push(const std::shared_ptr<StreamDelivery>& self, StreamResponse response) {
    std::lock_guard<std::mutex> lock(self->mutex_);
    if (self->dropping_) return;
    self->queue_.push_back(std::move(response));
    schedule(self);
  }

  /// The stream ended: after the responses queued before, wait() returns `outcome`.
  static void end(const std::shared_ptr<StreamDelivery>& self, Result<void> outcome) {
    std::lock_guard<std::mutex> lock(self->mutex_);
    self->outcome_ = std::move(outcome);
    self->ending_ = true;
    schedule(self);
  }

  /// Responses not yet delivered are dropped, and so are those still to come.
  void drop() {
    std::lock_guard<std::mutex> lock(mutex_);
    dropping_ = true;
    queue_.clear();
  }

  Result<void> wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    ended_changed_.wait(lock, [this] { return ended_; });
    return outcome_;
  }
  bool ended() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return ended_;
  }
  /// Whether the calling thread is delivering this stream's responses (its callback is on the
  /// stack).
  bool in_callback() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return draining_ && deliverer_ == std::this_thread::get_id();
  }

 private:
  // With mutex_ held.
  static void schedule(const std::shared_ptr<StreamDelivery>& self) {
    if (self->draining_) return;
    self->draining_ = true;
    self->pool_->post([self] { self->drain(); });
  }

  void drain() {
    std::unique_lock<std::mutex> lock(mutex_);
    deliverer_ = std::this_thread::get_id();
    while (!queue_.empty()) {
      StreamResponse next = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      // What escapes the callback stops here, as a request callback's does: escaping into a
      // callback thread would end the process.
      try {
        callback_(std::move(next));
      } catch (...) {
        if (threw_) threw_(std::current_exception());
      }
      lock.lock();
    }
    draining_ = false;
    deliverer_ = {};
    if (ending_ && !ended_) {
      ended_ = true;
      ended_changed_.notify_all();
    }
  }

  StreamCallback callback_;
  std::shared_ptr<ThreadPool> pool_;
  std::function<void(std::exception_ptr)> threw_;
  mutable std::mutex mutex_;
  std::condition_variable ended_changed_;
  std::deque<StreamResponse> queue_;
  bool draining_ = false;
  std::thread::id deliverer_;
  bool dropping_ = false;
  bool ending_ = false;
  bool ended_ = false;
  Result<void> outcome_;
};

}  // namespace detail

}  // namespace sonic

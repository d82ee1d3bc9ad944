// sonic — streams (Triton's ModelStreamInfer): many requests on one call, each answered by one
// response, or by any number for a decoupled model, all delivered in order to one callback.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "sonic/detail/thread_pool.hpp"
#include "sonic/error.hpp"
#include "sonic/request.hpp"
#include "sonic/transport.hpp"
#include "sonic/validate.hpp"

namespace sonic {

/// Options of Client::open_stream.
struct StreamOptions {
  /// How long the stream may last in all; 0: as long as it is open. (ClientOptions's timeouts
  /// are per request: a stream lives as long as its caller keeps it.)
  std::chrono::microseconds timeout{0};
};

/// Called with each response of a stream: one at a time, in the order the server sent them,
/// on the client's callback threads (never inside a call of InferStream).
using StreamCallback = std::function<void(StreamResponse)>;

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

/// A stream opened by Client::open_stream. A stream is not retried, nor moved to another
/// endpoint or to the CPU fallback: when it fails, wait() says why, and the caller opens
/// another. Every function is thread-safe.
class InferStream {
 public:
  /// How a stream's call is opened: Transport::open_stream's arguments, and its stream,
  /// shared so that its client can cancel it when it is destroyed first.
  using Opener = std::function<Result<std::shared_ptr<TransportStream>>(
      Deadline, std::function<void(StreamResponse)>, Callback<void>)>;

  /// `threw` gets what `on_response` throws (Client counts and logs it).
  InferStream(const Opener& open, StreamCallback on_response, const StreamOptions& options,
              std::shared_ptr<detail::ThreadPool> callbacks,
              std::function<void(std::exception_ptr)> threw = {})
      : delivery_(std::make_shared<detail::StreamDelivery>(
            std::move(on_response), std::move(callbacks), std::move(threw))) {
    auto opened = open(
        deadline_after(options.timeout),
        [delivery = delivery_](StreamResponse response) {
          detail::StreamDelivery::push(delivery, std::move(response));
        },
        [delivery = delivery_](Result<void> outcome) {
          detail::StreamDelivery::end(delivery, std::move(outcome));
        });
    stream_ = std::move(opened).value();  // throws sonic::Error (UNIMPLEMENTED, say)
  }

  InferStream(InferStream&&) noexcept = default;
  InferStream& operator=(InferStream&&) = delete;

  /// Cancels the stream unless it ended, and returns once its callback no longer runs (at
  /// once when destroyed from inside that callback, which then is its last).
  ~InferStream() {
    if (!stream_) return;  // moved from
    if (!delivery_->ended()) cancel();
    stream_.reset();  // returns once the transport's call has ended
    if (!delivery_->in_callback()) (void)delivery_->wait();  // how it ended: nobody asks now
  }

  /// Sends a request. It is checked as Client::infer checks it (a mistake comes back here and
  /// nothing is sent); its borrowed inputs are copied, so the caller's memory is free again
  /// when this returns. Per-request headers and timeouts do not apply on a stream.
  /// FAILED_PRECONDITION after close(), cancel(), or once the stream ended.
  Result<void> send(InferRequest request) {
    if (auto ok = check_request(request); !ok) return ok;
    return stream_->send(std::move(request));
  }

  /// Ends the client's side: no more requests. The stream ends once the server answered every
  /// request sent.
  void close() { stream_->close(); }

  /// Ends the stream now, on the wire too: responses not yet delivered are dropped, and
  /// wait() returns CANCELLED (unless it had ended).
  void cancel() {
    delivery_->drop();
    stream_->cancel();
  }

  /// Blocks until the stream ended and its last response was delivered: OK when it ended
  /// after close() with every request answered, else why it ended (the server's status, a
  /// lost connection, the timeout, CANCELLED). Not from inside the stream's callback.
  Result<void> wait() { return delivery_->wait(); }

  /// Whether the stream ended and its last response was delivered.
  bool ended() const { return delivery_->ended(); }

 private:
  std::shared_ptr<detail::StreamDelivery> delivery_;
  std::shared_ptr<TransportStream> stream_;
};

}  // namespace sonic

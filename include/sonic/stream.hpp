// sonic — streams (Triton's ModelStreamInfer): many requests on one call, each answered by one
// response, or by any number for a decoupled model, all delivered in order to one callback.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "sonic/detail/export.hpp"
#include "sonic/error.hpp"
#include "sonic/request.hpp"
#include "sonic/transport.hpp"

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
class StreamDelivery;
class ThreadPool;
}  // namespace detail

/// A stream opened by Client::open_stream. A stream is not retried, nor moved to another
/// endpoint or to the CPU fallback: when it fails, wait() says why, and the caller opens
/// another. Every function is thread-safe.
class SONIC_EXPORT InferStream {
 public:
  /// How a stream's call is opened: Transport::open_stream's arguments, and its stream,
  /// shared so that its client can cancel it when it is destroyed first.
  using Opener = std::function<Result<std::shared_ptr<TransportStream>>(
      Deadline, std::function<void(StreamResponse)>, Callback<void>)>;

  /// Opens the stream with `open` (Client::open_stream does); responses go to `on_response` on
  /// the `callbacks` pool; `threw` gets what `on_response` throws (Client counts and logs it).
  /// Throws sonic::Error when the stream cannot be opened (UNIMPLEMENTED, say).
  InferStream(const Opener& open, StreamCallback on_response, const StreamOptions& options,
              std::shared_ptr<detail::ThreadPool> callbacks,
              std::function<void(std::exception_ptr)> threw = {});

  InferStream(InferStream&&) noexcept;
  InferStream& operator=(InferStream&&) = delete;

  /// Cancels the stream unless it ended, and returns once its callback no longer runs (at
  /// once when destroyed from inside that callback, which then is its last).
  ~InferStream();

  /// Sends a request. It is checked as Client::infer checks it (a mistake comes back here and
  /// nothing is sent); its borrowed inputs are copied, so the caller's memory is free again
  /// when this returns. Per-request headers and timeouts do not apply on a stream.
  /// FAILED_PRECONDITION after close(), cancel(), or once the stream ended.
  Result<void> send(InferRequest request);

  /// Ends the client's side: no more requests. The stream ends once the server answered every
  /// request sent.
  void close();

  /// Ends the stream now, on the wire too: responses not yet delivered are dropped, and
  /// wait() returns CANCELLED (unless it had ended).
  void cancel();

  /// Blocks until the stream ended and its last response was delivered: OK when it ended
  /// after close() with every request answered, else why it ended (the server's status, a
  /// lost connection, the timeout, CANCELLED). Not from inside the stream's callback.
  Result<void> wait();

  /// Whether the stream ended and its last response was delivered.
  bool ended() const;

 private:
  std::shared_ptr<detail::StreamDelivery> delivery_;
  std::shared_ptr<TransportStream> stream_;
};

}  // namespace sonic

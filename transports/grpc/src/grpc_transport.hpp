// The gRPC transport: sonic::Transport over one HTTP/2 connection per endpoint, driven by its
// own network thread. Transports built on it (shared memory) use its generic unary calls.
#pragma once

#include <algorithm>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "client_connection.hpp"
#include "control_calls.hpp"
#include "infer_codec.hpp"
#include "protocol.hpp"
#include "sonic/detail/reconnect_backoff.hpp"
#include "sonic/transport.hpp"

namespace sonic::grpc {

class GrpcTransport final : public ProtobufControlCalls<GrpcTransport> {
 public:
  GrpcTransport(Endpoint endpoint, const ClientOptions& options)
      : endpoint_(std::move(endpoint)), options_(options), work_(asio::make_work_guard(io_)) {
    thread_ = std::thread([this] { io_.run(); });
  }

  ~GrpcTransport() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closing_ = true;
    }
    asio::post(io_, [this] {
      stopped_ = true;
      for (auto& timer : deferred_) timer->cancel();
      for (auto& weak : connections_) {
        if (auto connection = weak.lock())
          connection->shutdown(StatusCode::Cancelled, "the client was destroyed");
      }
      connections_.clear();
      current_.reset();
      work_.reset();
    });
    thread_.join();
  }

  void infer_async(InferRequest request, Deadline deadline, std::shared_ptr<CancelSignal> cancel,
                   Callback<InferResult> done) override {
    auto begun = Clock::now();
    auto body = encode_infer_request(request, options_.max_message_bytes);
    if (!body) {
      return fail(body.error(), [done = std::move(done)](Result<ReceivedMessage> failed) mutable {
        done(failed.error());
      });
    }
    auto call = make_call("ModelInfer", std::move(*body), deadline, kRawOutputField);
    call->times.encoded = Clock::now();
    call->headers = request.headers();
    // The call is alive whenever `done` runs (see ClientCall::done): its times may be read.
    call->done = [done = std::move(done), times = &call->times,
                  begun](Result<ReceivedMessage> message) mutable {
      if (!message) return done(message.error());
      auto decoding = Clock::now();
      auto result = decode_infer_response(std::move(*message));
      if (result) record_timing(result->timing(), *times, begun, decoding);
      done(std::move(result));
    };
    if (cancel) watch(*cancel, call);
    start(std::move(call));
  }

  /// Calls `method` of the inference service with a protobuf request; `handler` receives the
  /// parsed Response or an Error, exactly once, on the network thread.
  template <typename Response, typename Request, typename Handler>
  void unary(const char* method, const Request& request, Deadline deadline, Handler handler) {
    auto complete = [handler = std::move(handler),
                     method](Result<ReceivedMessage> message) mutable {
      if (!message) return handler(message.error());
      Response response;
      if (!response.ParseFromString(message->envelope)) {
        return handler(Error(StatusCode::Internal,
                             std::string("malformed ") + method + " response from server"));
      }
      handler(std::move(response));
    };
    auto body = std::make_shared<OutgoingBody>();
    body->append_owned(request.SerializeAsString());
    if (auto ok = body->finish(options_.max_message_bytes); !ok)
      return fail(ok.error(), std::move(complete));
    auto call = make_call(method, std::move(body), deadline, 0);
    call->done = std::move(complete);
    start(std::move(call));
  }

  // Makes `cancel` stop the call on the network thread: reset its stream, answer CANCELLED.
  void watch(CancelSignal& cancel, const std::shared_ptr<ClientCall>& call) {
    cancel.on_cancel([this, weak = std::weak_ptr<ClientCall>(call)] {
      std::lock_guard<std::mutex> lock(mutex_);
      if (closing_) return;  // the destructor completes every call anyway
      asio::post(io_, [weak] {
        auto cancelled = weak.lock();
        if (!cancelled || cancelled->finished) return;
        Error why(StatusCode::Cancelled, "the request was cancelled by the caller");
        if (auto connection = cancelled->connection.lock()) {
          return connection->abandon(cancelled, std::move(why));
        }
        auto done = std::move(cancelled->done);  // not submitted yet: nothing on the wire
        cancelled->finished = true;
        done(std::move(why));
      });
    });
  }

 private:
  // Turns the steps a call passed into durations; a step not seen leaves its part zero.
  static void record_timing(InferTiming& t, const CallTimes& at, Clock::time_point begun,
                            Clock::time_point decoding) {
    auto span = [](Clock::time_point from, Clock::time_point to) {
      return from == Clock::time_point{} || to == Clock::time_point{} || to < from
                 ? std::chrono::nanoseconds{0}
                 : std::chrono::duration_cast<std::chrono::nanoseconds>(to - from);
    };
    auto now = Clock::now();
    t.serialize = span(begun, at.encoded);
    t.queue = span(at.encoded, at.started);
    t.send = span(at.started, at.sent);
    t.wait = span(at.sent, at.first_byte);
    t.receive = span(at.first_byte, at.last_byte);
    t.deserialize = span(decoding, now);
    t.total = span(begun, now);
  }

  using MessageHandler = detail::UniqueFunction<void(Result<ReceivedMessage>)>;

  std::shared_ptr<ClientCall> make_call(const char* method, std::shared_ptr<OutgoingBody> body,
                                        Deadline deadline, std::uint32_t raw_field) {
    return std::make_shared<ClientCall>(method, std::move(body), deadline, raw_field,
                                        options_.max_message_bytes);
  }

  // Completes with an error found before sending, on the network thread (never inline).
  void fail(Error error, MessageHandler done) {
    auto task = [error = std::move(error), done = std::move(done)]() mutable {
      done(std::move(error));
    };
    std::unique_lock<std::mutex> lock(mutex_);
    if (closing_) {
      lock.unlock();
      task();
      return;
    }
    asio::post(io_, std::move(task));
  }

  void start(std::shared_ptr<ClientCall> call) {
    for (const auto& header : options_.headers) call->headers.push_back(header);
    std::unique_lock<std::mutex> lock(mutex_);
    if (closing_) {
      lock.unlock();
      auto done = std::move(call->done);
      done(Error(StatusCode::Cancelled, "the client is being destroyed"));
      return;
    }
    asio::post(io_, [this, call = std::move(call)]() mutable { submit(std::move(call)); });
  }

  // On the network thread: the call goes to the current connection while it is usable, else to
  // a fresh one, unless the last attempt to connect failed and its backoff is not over.
  void submit(std::shared_ptr<ClientCall> call) {
    if (call->finished) return;  // cancelled before it got here
    if (stopped_) {
      call->finished = true;
      auto done = std::move(call->done);
      return done(Error(StatusCode::Cancelled, "the client was destroyed"));
    }
    if (!current_ || !current_->usable()) {
      if (backoff_.wait() > Clock::duration::zero()) {
        if (backoff_.calls_wait()) return defer(std::move(call));
        call->finished = true;
        auto done = std::move(call->done);
        return done(Error(StatusCode::Unavailable, backoff_.describe(endpoint_.url)));
      }
      current_ = std::make_shared<ClientConnection>(
          io_, endpoint_, options_,
          ConnectionEvents{[this](std::shared_ptr<ClientCall> refused) { submit(refused); },
                           [this](const std::string& failure) { on_connect(failure); }});
      connections_.erase(
          std::remove_if(connections_.begin(), connections_.end(),
                         [](const std::weak_ptr<ClientConnection>& c) { return c.expired(); }),
          connections_.end());
      connections_.push_back(current_);
      current_->connect();
    }
    current_->submit(std::move(call));
  }

  // Holds a call until the next connection attempt (or its deadline, if sooner), then submits
  // it again; the destructor cancels the wait.
  void defer(std::shared_ptr<ClientCall> call) {
    if (call->deadline <= Clock::now()) {
      call->finished = true;
      auto done = std::move(call->done);
      return done(
          Error(StatusCode::DeadlineExceeded,
                "deadline passed while waiting to reconnect: " + backoff_.describe(endpoint_.url)));
    }
    auto timer = std::make_shared<asio::steady_timer>(
        io_, std::min(backoff_.next_attempt(), call->deadline));
    deferred_.push_back(timer);
    timer->async_wait([this, call, timer](std::error_code) mutable {
      deferred_.erase(std::remove(deferred_.begin(), deferred_.end(), timer), deferred_.end());
      submit(std::move(call));  // stopped: CANCELLED; deadline passed: DEADLINE_EXCEEDED
    });
  }

  // Reconnect backoff bookkeeping, on the network thread.
  void on_connect(const std::string& failure) {
    if (failure.empty()) return backoff_.succeeded();
    backoff_.failed(failure);
  }

  Endpoint endpoint_;
  ClientOptions options_;
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::thread thread_;
  std::mutex mutex_;
  bool closing_ = false;
  // Network-thread state.
  std::shared_ptr<ClientConnection> current_;
  std::vector<std::weak_ptr<ClientConnection>> connections_;  // including draining ones
  bool stopped_ = false;  // the destructor has closed every connection
  detail::ReconnectBackoff backoff_{options_};
  std::vector<std::shared_ptr<asio::steady_timer>> deferred_;  // calls waiting out the backoff
};

}  // namespace sonic::grpc

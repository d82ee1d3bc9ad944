// The tcp:// and tcp+zstd:// transports: KServe v2 messages in sonic's frames
// (proto/tcp_framing.md) over one TCP connection per endpoint, many requests in flight and
// answered in any order. Compression happens on the caller's thread, so that several callers
// compress in parallel; everything else runs on the transport's network thread.
#include <asio.hpp>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "control_calls.hpp"
#include "frame_stream.hpp"
#include "infer_codec.hpp"
#include "sonic/detail/reconnect_backoff.hpp"
#include "sonic/transport.hpp"

namespace sonic::tcp {

namespace {

using FrameHandler = detail::UniqueFunction<void(Result<Frame>)>;

// One connection of the client: frames out, answers matched to their calls by request id.
class ClientStream final : public FrameStream {
 public:
  ClientStream(asio::io_context& io, const Endpoint& endpoint, const ClientOptions& options,
               std::function<void(const std::string&)> on_connect)
      : FrameStream(io, options.max_message_bytes),
        io_(io),
        endpoint_(endpoint),
        options_(options),
        on_connect_(std::move(on_connect)),
        resolver_(io),
        connect_timer_(io),
        keepalive_timer_(io) {}

  bool usable() const { return open() && !failed_; }

  void connect() {
    auto self = std::static_pointer_cast<ClientStream>(shared_from_this());
    connect_timer_.expires_after(options_.connect_timeout);
    connect_timer_.async_wait([self](std::error_code ec) {
      if (!ec && !self->connected_) {
        self->connect_failed("no connection after " +
                             std::to_string(self->options_.connect_timeout.count()) + " ms");
      }
    });
    resolver_.async_resolve(
        endpoint_.host, std::to_string(endpoint_.port),
        [self](std::error_code ec, asio::ip::tcp::resolver::results_type results) {
          if (self->failed_) return;
          if (ec) return self->connect_failed("cannot resolve host: " + ec.message());
          asio::async_connect(self->socket(), results,
                              [self](std::error_code ec2, const asio::ip::tcp::endpoint&) {
                                if (self->failed_) return;
                                if (ec2) return self->connect_failed(ec2.message());
                                self->on_connected();
                              });
        });
  }

  /// Sends a frame for call `id`; `done` gets the answer frame or an Error, exactly once.
  void submit(std::uint64_t id, OutgoingFrame frame, Deadline deadline, FrameHandler done) {
    if (failed_ || !open()) {
      return done(Error(StatusCode::Unavailable, "connection to " + endpoint_.url + " is closed"));
    }
    Pending& call = pending_[id];
    call.done = std::move(done);
    if (deadline != Deadline::max()) {
      call.timer = std::make_unique<asio::steady_timer>(io_, deadline);
      auto self = std::static_pointer_cast<ClientStream>(shared_from_this());
      call.timer->async_wait([self, id](std::error_code ec) {
        if (ec) return;
        self->abandon(id,
                      Error(StatusCode::DeadlineExceeded,
                            "no response from " + self->endpoint_.url + " before the deadline"));
      });
    }
    if (connected_) {
      send(std::move(frame));
      schedule_keepalive();
    } else {
      waiting_.push_back(std::move(frame));
    }
  }

  /// Completes call `id` now with `why`; a later answer for it is dropped.
  void abandon(std::uint64_t id, Error why) {
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    auto done = std::move(it->second.done);
    pending_.erase(it);
    done(std::move(why));
  }

  void shutdown(StatusCode code, const std::string& why) {
    failed_ = true;
    fail_all(Error(code, why));
    close(why);
  }

 private:
  struct Pending {
    FrameHandler done;
    std::unique_ptr<asio::steady_timer> timer;
  };

  void on_connected() {
    connected_ = true;
    connect_timer_.cancel();
    std::error_code ignored;
    socket().set_option(asio::ip::tcp::no_delay(true), ignored);
    asio::post(io_, [report = on_connect_] { report(std::string()); });
    start_reading();
    for (auto& frame : waiting_) send(std::move(frame));
    waiting_.clear();
    schedule_keepalive();
  }

  void connect_failed(const std::string& why) {
    if (failed_) return;
    asio::post(io_, [report = on_connect_, why] { report(why); });
    shutdown(StatusCode::Unavailable, "cannot connect to " + endpoint_.url + ": " + why);
  }

  void on_frame(Frame frame) override {
    switch (frame.kind) {
      case FrameKind::Ping: return send(encode_control(FrameKind::Pong));
      case FrameKind::Pong: ping_outstanding_ = false; return;
      case FrameKind::Response:
      case FrameKind::Reply:
      case FrameKind::Error: {
        if (frame.kind == FrameKind::Error && frame.id == 0) {
          return shutdown(StatusCode::Unavailable, endpoint_.url + " closed the connection: " +
                                                       decode_error(frame).message());
        }
        auto it = pending_.find(frame.id);
        if (it == pending_.end()) return;  // abandoned (deadline, cancel): drop the answer
        auto done = std::move(it->second.done);
        pending_.erase(it);
        if (frame.kind == FrameKind::Error) return done(decode_error(frame));
        return done(std::move(frame));
      }
      default:
        return on_framing_error(
            Error(StatusCode::Internal, "the server sent a frame only clients send"));
    }
  }

  void on_framing_error(const Error& error) override {
    shutdown(StatusCode::Internal, "bad data from " + endpoint_.url + ": " + error.message());
  }

  void on_lost(const std::string& why) override {
    failed_ = true;
    keepalive_timer_.cancel();
    connect_timer_.cancel();
    fail_all(Error(StatusCode::Unavailable, "connection to " + endpoint_.url + " lost: " + why));
  }

  void fail_all(const Error& error) {
    auto pending = std::move(pending_);
    pending_.clear();
    for (auto& [id, call] : pending) {
      auto done = std::move(call.done);
      done(error);
    }
  }

  // Pings while calls wait, to notice a peer that vanished without closing the connection.
  void schedule_keepalive() {
    if (options_.keepalive_interval.count() <= 0 || keepalive_armed_ || !open()) return;
    keepalive_armed_ = true;
    auto wait = ping_outstanding_ ? options_.keepalive_timeout : options_.keepalive_interval;
    keepalive_timer_.expires_after(wait);
    auto self = std::static_pointer_cast<ClientStream>(shared_from_this());
    keepalive_timer_.async_wait([self](std::error_code ec) {
      self->keepalive_armed_ = false;
      if (ec || !self->open()) return;
      if (self->ping_outstanding_ &&
          Clock::now() - self->ping_sent_ >= self->options_.keepalive_timeout) {
        return self->shutdown(StatusCode::Unavailable,
                              "keepalive ping to " + self->endpoint_.url + " unanswered for " +
                                  std::to_string(self->options_.keepalive_timeout.count()) + " ms");
      }
      if (self->pending_.empty()) return;  // idle: no pings
      if (!self->ping_outstanding_) {
        self->send(encode_control(FrameKind::Ping));
        self->ping_outstanding_ = true;
        self->ping_sent_ = Clock::now();
      }
      self->schedule_keepalive();
    });
  }

  asio::io_context& io_;
  Endpoint endpoint_;
  const ClientOptions& options_;
  std::function<void(const std::string&)> on_connect_;
  asio::ip::tcp::resolver resolver_;
  asio::steady_timer connect_timer_;
  asio::steady_timer keepalive_timer_;
  bool connected_ = false;
  bool failed_ = false;
  bool keepalive_armed_ = false;
  bool ping_outstanding_ = false;
  Clock::time_point ping_sent_;
  std::vector<OutgoingFrame> waiting_;  // until connected
  std::map<std::uint64_t, Pending> pending_;
};

class TcpTransport final : public grpc::ProtobufControlCalls<TcpTransport> {
 public:
  TcpTransport(Endpoint endpoint, const ClientOptions& options, bool zstd)
      : endpoint_(std::move(endpoint)),
        options_(options),
        compression_{zstd, options.compression.zstd_level, options.compression.adaptive},
        work_(asio::make_work_guard(io_)),
        backoff_(options_) {
    thread_ = std::thread([this] { io_.run(); });
  }

  ~TcpTransport() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closing_ = true;
    }
    asio::post(io_, [this] {
      stopped_ = true;
      for (auto& timer : deferred_) timer->cancel();
      if (stream_) stream_->shutdown(StatusCode::Cancelled, "the client was destroyed");
      stream_.reset();
      work_.reset();
    });
    thread_.join();
  }

  void infer_async(InferRequest request, Deadline deadline, std::shared_ptr<CancelSignal> cancel,
                   Callback<InferResult> done) override {
    std::uint64_t id = next_id_++;
    auto begun = Clock::now();
    // The frame references the request's tensors (raw ones are not copied): it keeps them.
    auto tensors = std::make_shared<const std::vector<NamedTensor>>(request.inputs());
    OutgoingFrame frame =
        encode_frame(FrameKind::Request, id, grpc::infer_request_envelope(request), *tensors,
                     tensors, compression_, compression_.zstd ? kCompressResponse : 0);
    if (frame.raw_tensor_bytes > options_.max_message_bytes) {
      return post_error(Error(StatusCode::ResourceExhausted,
                              "request of " + std::to_string(frame.raw_tensor_bytes) +
                                  " tensor bytes exceeds max_message_bytes"),
                        std::move(done));
    }
    if (cancel) {
      cancel->on_cancel([this, id] {
        std::lock_guard<std::mutex> lock(mutex_);
        if (closing_) return;
        asio::post(io_, [this, id] {
          if (stream_) {
            stream_->abandon(
                id, Error(StatusCode::Cancelled, "the request was cancelled by the caller"));
          }
        });
      });
    }
    auto encoded = Clock::now();
    start(id, std::move(frame), deadline,
          [done = std::move(done), begun, encoded](Result<Frame> answer) mutable {
            if (!answer) return done(answer.error());
            if (answer->kind != FrameKind::Response) {
              return done(Error(StatusCode::Internal,
                                "the server answered a request with a " +
                                    std::to_string(static_cast<int>(answer->kind)) + " frame"));
            }
            auto decoding = Clock::now();
            grpc::ReceivedMessage message{std::move(answer->envelope), std::move(answer->tensors)};
            auto result = grpc::decode_infer_response(std::move(message));
            if (result) {
              // This transport times encoding and decoding; the rest is one span, "wait".
              auto now = Clock::now();
              auto& t = result->timing();
              t.serialize = encoded - begun;
              t.wait = decoding - encoded;
              t.deserialize = now - decoding;
              t.total = now - begun;
            }
            done(std::move(result));
          });
  }

  /// A control method: its request in a call frame, its response parsed from the reply;
  /// `handler(Result<Response>)` runs once (the control methods of ProtobufControlCalls).
  template <typename Response, typename Request, typename Handler>
  void unary(const char* method, const Request& request, Deadline deadline, Handler handler) {
    std::uint64_t id = next_id_++;
    start(
        id, encode_call(id, method, request.SerializeAsString()), deadline,
        [handler = std::move(handler), method](Result<Frame> answer) mutable {
          if (!answer) return handler(Result<Response>(answer.error()));
          Response response;
          if (answer->kind != FrameKind::Reply || !response.ParseFromString(answer->envelope)) {
            return handler(Result<Response>(Error(
                StatusCode::Internal, std::string("malformed ") + method + " reply from server")));
          }
          handler(Result<Response>(std::move(response)));
        });
  }

 private:
  void post_error(Error error, Callback<InferResult> done) {
    auto task = [error = std::move(error), done = std::move(done)]() mutable { done(error); };
    std::unique_lock<std::mutex> lock(mutex_);
    if (closing_) {
      lock.unlock();
      return task();
    }
    asio::post(io_, std::move(task));
  }

  // A frame on its way to the network thread.
  struct Outgoing {
    std::uint64_t id;
    OutgoingFrame frame;
    Deadline deadline;
    FrameHandler done;
  };

  void start(std::uint64_t id, OutgoingFrame frame, Deadline deadline, FrameHandler done) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (closing_) {
      lock.unlock();
      return done(Error(StatusCode::Cancelled, "the client is being destroyed"));
    }
    auto out =
        std::make_shared<Outgoing>(Outgoing{id, std::move(frame), deadline, std::move(done)});
    asio::post(io_, [this, out] { dispatch(out); });
  }

  // On the network thread: to the current connection, a new one, or (alone, inside the
  // reconnect backoff) a wait for the next attempt; fail-fast when there is somewhere else to go.
  void dispatch(const std::shared_ptr<Outgoing>& out) {
    if (stopped_) return out->done(Error(StatusCode::Cancelled, "the client was destroyed"));
    if (!stream_ || !stream_->usable()) {
      if (backoff_.wait() > Clock::duration::zero()) {
        if (!backoff_.calls_wait()) {
          return out->done(Error(StatusCode::Unavailable, backoff_.describe(endpoint_.url)));
        }
        if (out->deadline <= Clock::now()) {
          return out->done(Error(
              StatusCode::DeadlineExceeded,
              "deadline passed while waiting to reconnect: " + backoff_.describe(endpoint_.url)));
        }
        auto timer = std::make_shared<asio::steady_timer>(
            io_, std::min(backoff_.next_attempt(), out->deadline));
        deferred_.push_back(timer);
        timer->async_wait([this, out, timer](std::error_code) {
          deferred_.erase(std::remove(deferred_.begin(), deferred_.end(), timer), deferred_.end());
          dispatch(out);
        });
        return;
      }
      stream_ = std::make_shared<ClientStream>(io_, endpoint_, options_,
                                               [this](const std::string& failure) {
                                                 if (failure.empty()) return backoff_.succeeded();
                                                 backoff_.failed(failure);
                                               });
      stream_->connect();
    }
    stream_->submit(out->id, std::move(out->frame), out->deadline, std::move(out->done));
  }

  Endpoint endpoint_;
  ClientOptions options_;
  Compression compression_;
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::thread thread_;
  std::mutex mutex_;
  bool closing_ = false;  // guarded by mutex_
  std::atomic<std::uint64_t> next_id_{1};
  // Network-thread state.
  bool stopped_ = false;
  detail::ReconnectBackoff backoff_;
  std::shared_ptr<ClientStream> stream_;
  std::vector<std::shared_ptr<asio::steady_timer>> deferred_;  // frames waiting out the backoff
};

const bool registered = [] {
  for (bool zstd : {false, true}) {
    transport_registry().add(
        zstd ? "tcp+zstd" : "tcp",
        [zstd](const Endpoint& endpoint,
               const ClientOptions& options) -> Result<std::unique_ptr<Transport>> {
          return std::unique_ptr<Transport>(
              std::make_unique<TcpTransport>(endpoint, options, zstd));
        });
  }
  return true;
}();

}  // namespace

}  // namespace sonic::tcp

// Referenced by the sonic::tcp CMake target (-Wl,-u) so that the registration above is linked.
extern "C" {
int sonic_tcp_transport_anchor = 1;
}

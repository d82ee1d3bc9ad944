#include "grpc_stream.hpp"

#include <condition_variable>
#include <mutex>
#include <utility>

#include "protocol/control_methods.hpp"
#include "protocol/infer_codec.hpp"

namespace sonic::grpc {

namespace {

// A response message as the caller gets it: decoded (its tensors views of the reader's
// buffers), with the request it answers and whether it is its last.
StreamResponse to_response(protocol::ReceivedMessage message) {
  StreamResponse response;
  std::string failed_id;
  response.result = protocol::decode_stream_infer_response(std::move(message), &failed_id);
  if (!response.result) {
    response.request_id = std::move(failed_id);
    return response;  // an error ends its request (Triton sends it as the request's last)
  }
  response.request_id = response.result->request_id();
  const auto& parameters = response.result->parameters();
  if (auto it = parameters.find(protocol::kFinalResponse); it != parameters.end()) {
    if (const bool* final = std::get_if<bool>(&it->second)) response.final = *final;
  }
  return response;
}

class GrpcStream final : public TransportStream {
 public:
  GrpcStream(std::shared_ptr<GrpcChannel> channel, std::shared_ptr<ClientCall> call,
             std::size_t max_message_bytes, Compression compression)
      : channel_(std::move(channel)),
        call_(std::move(call)),
        max_message_bytes_(max_message_bytes),
        compression_(compression) {}

  // Cancels the call unless it ended, and waits for its `done` (which never runs on the
  // caller's thread: this is not called from the network thread's callbacks by contract).
  ~GrpcStream() override {
    cancel();
    std::unique_lock<std::mutex> lock(ended_->mutex);
    ended_->changed.wait(lock, [this] { return ended_->ended; });
  }

  Result<void> send(InferRequest request) override {
    // The message references the request's tensors until it is written: it keeps the
    // request, whose borrowed inputs are copied first.
    auto kept = std::make_shared<InferRequest>(std::move(request).own_inputs());
    auto message = protocol::encode_infer_request(*kept, max_message_bytes_);
    if (!message) return message.error();
    if (auto packed =
            protocol::compress_message(**message, compression_, protocol::kDefaultLevel)) {
      message = std::move(packed);  // owns its bytes: the request need not stay
    } else {
      (*message)->keep_alive(std::move(kept));
    }
    // Posted under the lock that close() posts under: a message the caller was told is sent
    // reaches the network thread before the end of the body does.
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) {
      return Error(StatusCode::FailedPrecondition, "the stream was closed or has ended");
    }
    asio::post(channel_->io(), [call = call_, message = std::move(*message)] {
      if (call->finished()) return;
      call->body->append_message(*message);
      if (auto connection = call->connection.lock()) connection->resume_call(call);
    });
    return {};
  }

  void close() override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return;
    closed_ = true;
    asio::post(channel_->io(), [call = call_] {
      if (call->finished()) return;
      call->body->open = false;
      if (auto connection = call->connection.lock()) connection->resume_call(call);
    });
  }

  void cancel() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closed_ = true;
    }
    cancel_->cancel();
  }

  /// Wraps `done` so that sends fail once the call ended and the destructor learns of it, and
  /// starts the call. (`this` outlives `done`: the destructor waits for it.)
  void start(const std::shared_ptr<Calls>& calls, Callback<void> done) {
    call_->done = [this, ended = ended_,
                   done = std::move(done)](Result<protocol::ReceivedMessage> outcome) mutable {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        closed_ = true;
      }
      done(outcome ? Result<void>() : Result<void>(outcome.error()));
      std::lock_guard<std::mutex> lock(ended->mutex);
      ended->ended = true;
      ended->changed.notify_all();
    };
    Calls::watch(*cancel_, channel_, call_);
    Calls::start(calls, channel_, call_);
  }

 private:
  struct Ended {
    std::mutex mutex;
    std::condition_variable changed;
    bool ended = false;
  };

  std::shared_ptr<GrpcChannel> channel_;
  std::shared_ptr<ClientCall> call_;
  std::size_t max_message_bytes_;
  Compression compression_;  // of each request, when it shrinks
  std::shared_ptr<CancelSignal> cancel_ = std::make_shared<CancelSignal>();
  std::shared_ptr<Ended> ended_ = std::make_shared<Ended>();
  std::mutex mutex_;
  bool closed_ = false;  // no more sends: closed, cancelled
};

}  // namespace

std::unique_ptr<TransportStream> open_grpc_stream(
    std::shared_ptr<GrpcChannel> channel, std::shared_ptr<Calls> calls,
    std::vector<std::pair<std::string, std::string>> headers, std::size_t max_message_bytes,
    std::size_t held_bytes_limit, Compression compression, Deadline deadline,
    std::function<void(StreamResponse)> on_response, Callback<void> done) {
  auto body = std::make_shared<protocol::OutgoingBody>();
  body->open = true;
  // The tensors inside each response's infer_response go straight into buffers of their own.
  auto call =
      std::make_shared<ClientCall>(std::string(protocol::kModelStreamInfer), std::move(body),
                                   deadline, protocol::kStreamResponseRawField, max_message_bytes);
  call->headers = std::move(headers);
  if (compression != Compression::None) {
    call->headers.emplace_back("grpc-encoding", protocol::encoding_name(compression));
  }
  // Undelivered responses hold up to one stream window; the window reopens on the network
  // thread once the caller dropped enough of them.
  std::weak_ptr<ClientCall> weak = call;
  call->stream = std::make_unique<StreamPart>();
  call->stream->window = std::make_shared<StreamWindow>(held_bytes_limit, [channel, weak] {
    asio::post(channel->io(), [weak] {
      auto held = weak.lock();
      if (!held) return;
      if (auto connection = held->connection.lock()) connection->reopen_window(held);
    });
  });
  call->stream->on_message = [on_response = std::move(on_response)](
                                 protocol::ReceivedMessage message,
                                 std::shared_ptr<const void> hold) {
    StreamResponse response = to_response(std::move(message));
    response.window_hold = std::move(hold);
    on_response(std::move(response));
  };
  auto stream = std::make_unique<GrpcStream>(channel, call, max_message_bytes, compression);
  stream->start(calls, std::move(done));
  return stream;
}

}  // namespace sonic::grpc

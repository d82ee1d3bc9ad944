#include "sonic/tcp/server.hpp"

#include <asio.hpp>

#include <mutex>
#include <thread>
#include <vector>

#include "control_service.hpp"
#include "frame_stream.hpp"
#include "infer_codec.hpp"

namespace sonic::tcp {

namespace {

// One client connection: requests run on the executor, answers go back in any order.
class ServerStream final : public FrameStream {
 public:
  ServerStream(asio::ip::tcp::socket socket, std::shared_ptr<asio::io_context> io,
               std::shared_ptr<CpuExecutor> executor, const ServerOptions& options,
               const grpc::ServerOptions& control_options)
      : FrameStream(std::move(socket), options.max_message_bytes),
        io_(std::move(io)),
        executor_(std::move(executor)),
        options_(options),
        control_options_(control_options) {}

 private:
  void on_frame(Frame frame) override {
    switch (frame.kind) {
      case FrameKind::Ping: return send(encode_control(FrameKind::Pong));
      case FrameKind::Pong: return;
      case FrameKind::Call: return answer_call(frame);
      case FrameKind::Request: return infer(std::move(frame));
      default:
        return on_framing_error(
            Error(StatusCode::InvalidArgument, "a client sent a frame only servers send"));
    }
  }

  void on_framing_error(const Error& error) override {
    send(encode_error(0, error));  // say why, then close once it is written
    auto self = shared_from_this();
    asio::post(*io_, [self, why = error.message()] { self->close(why); });
  }

  void on_lost(const std::string&) override {}

  void answer_call(const Frame& frame) {
    auto call = decode_call(frame);
    if (!call) return send(encode_error(frame.id, call.error()));
    grpc::ControlContext context{*executor_, control_options_, nullptr};
    auto reply = grpc::answer_control(context, call->first, call->second);
    if (!reply) return send(encode_error(frame.id, reply.error()));
    send(encode_frame(FrameKind::Reply, frame.id, std::move(*reply), {}, nullptr, {}));
  }

  void infer(Frame frame) {
    std::uint64_t id = frame.id;
    bool compress = (frame.flags & kCompressResponse) != 0;
    grpc::ReceivedMessage message{std::move(frame.envelope), std::move(frame.tensors)};
    auto request = grpc::decode_infer_request(std::move(message));
    if (!request) return send(encode_error(id, request.error()));
    std::weak_ptr<FrameStream> weak = shared_from_this();
    // The completion may come after the server stopped: it holds the io_context, not the server.
    std::shared_ptr<asio::io_context> io = io_;
    Compression compression{compress, options_.zstd_level, true};
    if (options_.inline_models)
      return send(encode_answer(id, executor_->infer(*request), compression));
    executor_->infer_async(std::move(*request),
                           [weak, io, id, compression](Result<InferResult> result) {
                             // On an executor thread: encode (and compress) here, write on the
                             // network thread.
                             auto answer = encode_answer(id, std::move(result), compression);
                             asio::post(*io, [weak, answer = std::move(answer)]() mutable {
                               if (auto self = weak.lock()) self->send(std::move(answer));
                             });
                           });
  }

  static OutgoingFrame encode_answer(std::uint64_t id, Result<InferResult> result,
                                     const Compression& compression) {
    if (!result) return encode_error(id, result.error());
    auto outputs = std::make_shared<const std::vector<NamedTensor>>(result->outputs());
    return encode_frame(FrameKind::Response, id, grpc::infer_response_envelope(*result), *outputs,
                        outputs, compression);
  }

  std::shared_ptr<asio::io_context> io_;
  std::shared_ptr<CpuExecutor> executor_;
  const ServerOptions& options_;
  const grpc::ServerOptions& control_options_;
};

}  // namespace

struct Server::Impl {
  Impl(std::shared_ptr<CpuExecutor> exec, ServerOptions opts)
      : executor(std::move(exec)), options(std::move(opts)), acceptor(*io) {
    control_options.name = options.name;
    control_options.shared_memory = false;  // regions are a gRPC matter
  }

  void accept_next() {
    acceptor.async_accept([this](std::error_code ec, asio::ip::tcp::socket socket) {
      if (ec) return;  // closed by stop()
      std::error_code ignored;
      socket.set_option(asio::ip::tcp::no_delay(true), ignored);
      auto stream =
          std::make_shared<ServerStream>(std::move(socket), io, executor, options, control_options);
      streams.push_back(stream);
      stream->start_reading();
      accept_next();
    });
  }

  std::shared_ptr<CpuExecutor> executor;
  ServerOptions options;
  grpc::ServerOptions control_options;
  std::shared_ptr<asio::io_context> io = std::make_shared<asio::io_context>();
  asio::ip::tcp::acceptor acceptor;
  std::vector<std::weak_ptr<FrameStream>> streams;  // network thread only
  std::thread thread;
  std::uint16_t bound_port = 0;
  std::mutex mutex;
  bool started = false, stopped = false;
};

Server::Server(std::shared_ptr<CpuExecutor> executor, ServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(executor), std::move(options))) {}

Server::~Server() { stop(); }

void Server::start() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (impl_->started) return;
  std::error_code ec;
  auto address = asio::ip::make_address(impl_->options.host, ec);
  if (ec) {
    throw Error(StatusCode::InvalidArgument,
                "cannot listen on '" + impl_->options.host + "': not an IP address");
  }
  asio::ip::tcp::endpoint endpoint(address, impl_->options.port);
  impl_->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl_->acceptor.set_option(asio::ip::tcp::acceptor::reuse_address(true), ec);
  if (!ec) impl_->acceptor.bind(endpoint, ec);
  if (!ec) impl_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    throw Error(StatusCode::Unavailable, "cannot listen on " + impl_->options.host + ":" +
                                             std::to_string(impl_->options.port) + ": " +
                                             ec.message());
  }
  impl_->bound_port = impl_->acceptor.local_endpoint().port();
  impl_->started = true;
  impl_->accept_next();
  impl_->thread = std::thread([io = impl_->io] { io->run(); });
}

std::uint16_t Server::port() const { return impl_->bound_port; }

void Server::stop() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (!impl_->started || impl_->stopped) return;
  impl_->stopped = true;
  asio::post(*impl_->io, [impl = impl_.get()] {
    std::error_code ignored;
    impl->acceptor.close(ignored);
    for (auto& weak : impl->streams) {
      if (auto stream = weak.lock()) stream->close("server stopping");
    }
    impl->streams.clear();
  });
  impl_->thread.join();
}

}  // namespace sonic::tcp

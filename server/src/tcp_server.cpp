#include "tcp_server.hpp"

#include "control_service.hpp"
#include "net/frame_stream.hpp"
#include "protocol/infer_codec.hpp"

namespace sonic::server {

using protocol::tcp::Compression;
using protocol::tcp::Frame;
using protocol::tcp::FrameKind;
using protocol::tcp::OutgoingFrame;

/// One client connection: requests run on the executor, answers go back in any order.
class TcpConnection final : public net::FrameStream {
 public:
  TcpConnection(asio::ip::tcp::socket socket, std::shared_ptr<asio::io_context> io,
                std::shared_ptr<ServerContext> context,
                std::shared_ptr<net::ConnectionSet<TcpConnection>> set)
      : FrameStream(std::move(socket), context->options.max_message_bytes),
        io_(std::move(io)),
        context_(std::move(context)),
        set_(std::move(set)) {}

  const std::shared_ptr<asio::io_context>& io_context() const { return io_; }

 private:
  void on_frame(Frame frame) override {
    switch (frame.kind) {
      case FrameKind::Ping: return send(protocol::tcp::encode_control(FrameKind::Pong));
      case FrameKind::Pong: return;
      case FrameKind::Call: return answer_call(frame);
      case FrameKind::Request: return infer(std::move(frame));
      default:
        return on_framing_error(
            Error(StatusCode::InvalidArgument, "a client sent a frame only servers send"));
    }
  }

  void on_framing_error(const Error& error) override {
    send(protocol::tcp::encode_error(0, error));  // say why, then close once it is written
    auto self = shared_from_this();
    asio::post(*io_, [self, why = error.message()] { self->close(why); });
  }

  void on_lost(const std::string&) override { set_->remove(this); }

  void answer_call(const Frame& frame) {
    auto call = protocol::tcp::decode_call(frame);
    if (!call) return send(protocol::tcp::encode_error(frame.id, call.error()));
    // Regions are a gRPC matter: the TCP port does not serve the shared memory extension.
    ControlContext control{*context_->executor, context_->options, nullptr};
    auto reply = answer_control(control, call->first, call->second);
    if (!reply) return send(protocol::tcp::encode_error(frame.id, reply.error()));
    send(protocol::tcp::encode_frame(FrameKind::Reply, frame.id, std::move(*reply), {}, nullptr,
                                     {}));
  }

  void infer(Frame frame) {
    std::uint64_t id = frame.id;
    bool compress = (frame.flags & protocol::tcp::kCompressResponse) != 0;
    protocol::ReceivedMessage message{std::move(frame.envelope), std::move(frame.tensors)};
    auto request = protocol::decode_infer_request(std::move(message));
    if (!request) return send(protocol::tcp::encode_error(id, request.error()));
    Compression compression{compress, context_->options.zstd_level, true};
    if (context_->options.inline_models) {
      return send(encode_answer(id, context_->executor->infer(*request), compression));
    }
    // The completion may come after the server stopped: it holds the io_context, not the server.
    std::weak_ptr<FrameStream> weak = shared_from_this();
    context_->executor->infer_async(
        std::move(*request), [weak, io = io_, id, compression](Result<InferResult> result) {
          // On an executor thread: encode (and compress) here, write on the network thread.
          auto answer = encode_answer(id, std::move(result), compression);
          asio::post(*io, [weak, answer = std::move(answer)]() mutable {
            if (auto self = weak.lock()) self->send(std::move(answer));
          });
        });
  }

  static OutgoingFrame encode_answer(std::uint64_t id, Result<InferResult> result,
                                     const Compression& compression) {
    if (!result) return protocol::tcp::encode_error(id, result.error());
    auto outputs = std::make_shared<const std::vector<NamedTensor>>(result->outputs());
    return protocol::tcp::encode_frame(FrameKind::Response, id,
                                       protocol::infer_response_envelope(*result), *outputs,
                                       outputs, compression);
  }

  std::shared_ptr<asio::io_context> io_;
  std::shared_ptr<ServerContext> context_;
  std::shared_ptr<net::ConnectionSet<TcpConnection>> set_;
};

TcpServer::TcpServer(std::shared_ptr<ServerContext> context, net::NetworkThreads& threads)
    : context_(std::move(context)),
      threads_(threads),
      accept_io_(threads_.next()),
      listener_(*accept_io_, context_->options.host, context_->options.tcp_port.value_or(0)),
      connections_(std::make_shared<net::ConnectionSet<TcpConnection>>()) {}

void TcpServer::start() {
  listener_.start([this] { return threads_.next(); },
                  [this](asio::ip::tcp::socket socket, std::shared_ptr<asio::io_context> io) {
                    std::error_code ignored;
                    socket.set_option(asio::ip::tcp::no_delay(true), ignored);
                    auto connection = std::make_shared<TcpConnection>(std::move(socket), io,
                                                                      context_, connections_);
                    if (!connections_->add(connection)) return;  // stopping: it closes now
                    asio::post(*io, [connection] { connection->start_reading(); });
                  });
}

void TcpServer::stop() {
  listener_.close();
  for (auto& connection : connections_->close()) {
    asio::post(*connection->io_context(), [connection] { connection->close("server stopping"); });
  }
}

}  // namespace sonic::server

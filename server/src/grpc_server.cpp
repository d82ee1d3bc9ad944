#include "grpc_server.hpp"

#include <map>
#include <optional>

#include "control_service.hpp"
#include "net/h2_session.hpp"
#include "protocol/grpc_wire.hpp"
#include "protocol/infer_codec.hpp"

namespace sonic::server {

namespace {

using protocol::OutgoingBody;
using protocol::ReceivedMessage;

// One request stream on the server.
struct ServerStream {
  explicit ServerStream(std::size_t max_bytes) : max_message_bytes(max_bytes) {}
  std::size_t max_message_bytes;
  std::string path;
  std::string content_type;
  std::string encoding;
  std::optional<std::chrono::nanoseconds> timeout;
  Clock::time_point started = Clock::now();
  std::optional<protocol::MessageReader> reader;  // made when the path is known
  std::optional<Error> error;                     // a receive error to answer with
  std::shared_ptr<OutgoingBody> response;
  bool answered = false;
};

using IoContext = std::shared_ptr<asio::io_context>;

}  // namespace

/// One client connection: decodes calls, runs inference on the executor, answers.
class GrpcConnection final : public net::H2Session {
 public:
  GrpcConnection(asio::ip::tcp::socket socket, IoContext io, std::shared_ptr<ServerContext> context,
                 std::shared_ptr<net::ConnectionSet<GrpcConnection>> set)
      : H2Session(std::move(socket)),
        io_(std::move(io)),
        context_(std::move(context)),
        set_(std::move(set)),
        close_timer_(*io_) {}

  IoContext io_context() const { return io_; }

  void start() {
    if (lost_) return;  // stopped before it started
    nghttp2_session_callbacks* callbacks = nullptr;
    nghttp2_session_callbacks_new(&callbacks);
    install_common_callbacks(callbacks);
    nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks,
                                                            &GrpcConnection::on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, &GrpcConnection::on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks,
                                                              &GrpcConnection::on_data_chunk);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, &GrpcConnection::on_frame_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks,
                                                           &GrpcConnection::on_stream_close);
    int rv = nghttp2_session_server_new(&session_, callbacks, this);
    nghttp2_session_callbacks_del(callbacks);
    if (rv != 0) return close_socket();
    std::error_code ignored;
    socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
    net::H2Settings settings;
    settings.stream_window_bytes = context_->options.stream_window_bytes;
    settings.connection_window_bytes = context_->options.connection_window_bytes;
    settings.max_concurrent_streams = context_->options.max_concurrent_streams;
    submit_settings(settings, true);
    start_reading();
    flush();
  }

  /// Ends the connection: GOAWAY, then close once it is written (a peer that does not read
  /// gets half a second). Runs on the connection's thread.
  void shutdown() {
    if (lost_) return;
    if (!session_) {
      lost_ = true;
      close_socket();
      return;
    }
    nghttp2_session_terminate_session(session_, NGHTTP2_NO_ERROR);
    flush();  // when the GOAWAY is written, flush() finds nothing left and closes
    auto self = std::static_pointer_cast<GrpcConnection>(shared_from_this());
    close_timer_.expires_after(std::chrono::milliseconds(500));
    close_timer_.async_wait([self](std::error_code ec) {
      if (!ec) self->fail("server stopping");
    });
  }

 private:
  void on_connection_lost(const std::string&) override {
    close_timer_.cancel();
    streams_.clear();
    set_->remove(this);
  }

  void on_body_end(std::int32_t stream_id, std::uint32_t* flags) override {
    // Trailers follow the body: grpc-status 0.
    *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
    nghttp2_nv trailers[] = {net::make_header("grpc-status", "0")};
    nghttp2_submit_trailer(session_, stream_id, trailers, 1);
  }

  ServerStream* find(std::int32_t id) {
    auto it = streams_.find(id);
    return it == streams_.end() ? nullptr : it->second.get();
  }

  static int on_begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    auto* self = static_cast<GrpcConnection*>(user_data);
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
      self->streams_[frame->hd.stream_id] =
          std::make_unique<ServerStream>(self->context_->options.max_message_bytes);
    }
    return 0;
  }

  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                       std::size_t namelen, const std::uint8_t* value, std::size_t valuelen,
                       std::uint8_t, void* user_data) {
    auto* self = static_cast<GrpcConnection*>(user_data);
    ServerStream* stream = self->find(frame->hd.stream_id);
    if (!stream) return 0;
    std::string_view n(reinterpret_cast<const char*>(name), namelen);
    std::string_view v(reinterpret_cast<const char*>(value), valuelen);
    if (n == ":path") {
      stream->path = std::string(v);
    } else if (n == "content-type") {
      stream->content_type = std::string(v);
    } else if (n == "grpc-timeout") {
      stream->timeout = protocol::parse_grpc_timeout(v);
    } else if (n == "grpc-encoding") {
      stream->encoding = std::string(v);
    }
    return 0;
  }

  static int on_data_chunk(nghttp2_session*, std::uint8_t, std::int32_t stream_id,
                           const std::uint8_t* data, std::size_t len, void* user_data) {
    auto* self = static_cast<GrpcConnection*>(user_data);
    ServerStream* stream = self->find(stream_id);
    if (!stream || stream->error || stream->answered) return 0;
    if (!stream->reader) {
      bool infer = stream->path == std::string(protocol::kServicePrefix) + "ModelInfer";
      stream->reader.emplace(infer ? protocol::kRawInputField : 0, stream->max_message_bytes);
    }
    if (auto ok = stream->reader->feed(data, len); !ok) {
      stream->error = ok.error();
    } else if (stream->reader->messages().size() > 1) {
      stream->error =
          Error(StatusCode::InvalidArgument, "a unary call takes exactly one request message");
    }
    // Answer at once and ignore the rest of the stream: nothing more is buffered for it.
    if (stream->error) self->respond_error(stream_id, *stream->error);
    return 0;
  }

  static int on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    auto* self = static_cast<GrpcConnection*>(user_data);
    bool request_end = (frame->hd.type == NGHTTP2_DATA || frame->hd.type == NGHTTP2_HEADERS) &&
                       (frame->hd.flags & NGHTTP2_FLAG_END_STREAM);
    if (request_end) self->dispatch(frame->hd.stream_id);
    return 0;
  }

  static int on_stream_close(nghttp2_session*, std::int32_t stream_id, std::uint32_t,
                             void* user_data) {
    static_cast<GrpcConnection*>(user_data)->streams_.erase(stream_id);
    return 0;
  }

  void dispatch(std::int32_t id) {
    ServerStream* stream = find(id);
    if (!stream) return;
    if (stream->error) return respond_error(id, *stream->error);
    if (stream->content_type.rfind("application/grpc", 0) != 0) {
      return respond_error(
          id, Error(StatusCode::InvalidArgument,
                    "content-type must be application/grpc, got '" + stream->content_type + "'"));
    }
    if (stream->path.rfind(protocol::kServicePrefix, 0) != 0) {
      return respond_error(
          id, Error(StatusCode::Unimplemented, "unknown service in path '" + stream->path + "'"));
    }
    if (!stream->reader) stream->reader.emplace(0, stream->max_message_bytes);
    auto& messages = stream->reader->messages();
    if (messages.size() != 1 || !stream->reader->at_boundary()) {
      return respond_error(
          id, Error(StatusCode::InvalidArgument, "a unary call needs exactly one request message"));
    }
    ReceivedMessage message = std::move(messages.front());
    messages.clear();
    std::string method = stream->path.substr(protocol::kServicePrefix.size());
    if (method == "ModelInfer") return infer(id, std::move(message));
    control(id, method, message.envelope);
  }

  void infer(std::int32_t id, ReceivedMessage message) {
    auto decoded = protocol::decode_infer_request(std::move(message));
    if (!decoded) return respond_error(id, decoded.error());
    // Inputs in shared memory become views of their regions; outputs bound for regions are
    // written there once the model ran.
    auto request = context_->shared_memory.bind_inputs(*decoded);
    if (!request) return respond_error(id, request.error());
    auto targets = context_->shared_memory.output_targets(*request);
    if (!targets) return respond_error(id, targets.error());
    std::size_t max_bytes = context_->options.max_message_bytes;
    if (context_->options.inline_models) {
      return answer(id, encode_answer(context_->executor->infer(*request), *targets,
                                      context_->shared_memory, max_bytes));
    }
    std::weak_ptr<GrpcConnection> weak =
        std::static_pointer_cast<GrpcConnection>(shared_from_this());
    IoContext io = io_;
    context_->executor->infer_async(
        std::move(*request), [weak, io, id, max_bytes, context = context_,
                              targets = std::move(*targets)](Result<InferResult> result) {
          // On an executor thread: encode here, answer on the connection's thread.
          auto body = encode_answer(std::move(result), targets, context->shared_memory, max_bytes);
          asio::post(*io, [weak, id, body = std::move(body)]() mutable {
            if (auto self = weak.lock()) self->answer(id, std::move(body));
          });
        });
  }

  // Writes outputs bound for shared memory into their regions and encodes the rest.
  static Result<std::shared_ptr<OutgoingBody>> encode_answer(
      Result<InferResult> result, const std::vector<OutputTarget>& targets,
      const SharedMemoryRegistry& registry, std::size_t max_bytes) {
    if (!result) return result.error();
    if (auto placed = registry.place_outputs(*result, targets); !placed) return placed.error();
    return protocol::encode_infer_response(*result, max_bytes);
  }

  void answer(std::int32_t id, Result<std::shared_ptr<OutgoingBody>> body) {
    if (body) return respond(id, std::move(*body));
    respond_error(id, body.error());
  }

  void control(std::int32_t id, const std::string& method, const std::string& bytes) {
    ControlContext context{*context_->executor, context_->options,
                           context_->options.shared_memory ? &context_->shared_memory : nullptr};
    auto reply = answer_control(context, method, bytes);
    if (!reply) return respond_error(id, reply.error());
    auto body = std::make_shared<OutgoingBody>();
    body->append_owned(*reply);
    if (auto ok = body->finish(context_->options.max_message_bytes); !ok)
      return respond_error(id, ok.error());
    respond(id, std::move(body));
  }

  void respond(std::int32_t id, std::shared_ptr<OutgoingBody> body) {
    ServerStream* stream = find(id);
    if (!stream || stream->answered || lost_) return;
    if (stream->timeout && Clock::now() - stream->started > *stream->timeout) {
      return respond_error(id, Error(StatusCode::DeadlineExceeded,
                                     "the request's grpc-timeout passed on the server"));
    }
    stream->answered = true;
    stream->response = std::move(body);
    nghttp2_nv headers[] = {net::make_header(":status", "200"),
                            net::make_header("content-type", "application/grpc")};
    nghttp2_data_provider provider = body_provider(stream->response.get());
    nghttp2_submit_response(session_, id, headers, 2, &provider);
    flush();
  }

  // A trailers-only response: the status travels in the only HEADERS frame, and an error with
  // a reason carries it in grpc-status-details-bin (a google.rpc.Status with an ErrorInfo).
  void respond_error(std::int32_t id, const Error& error) {
    ServerStream* stream = find(id);
    if (!stream || stream->answered || lost_) return;
    stream->answered = true;
    std::string code = std::to_string(static_cast<int>(error.code()));
    std::string message = protocol::percent_encode(error.message());
    std::string details;
    if (!error.reason().empty()) {
      details = protocol::base64_encode(protocol::encode_status_details(error));
    }
    nghttp2_nv headers[] = {
        net::make_header(":status", "200"), net::make_header("content-type", "application/grpc"),
        net::make_header("grpc-status", code), net::make_header("grpc-message", message),
        net::make_header(protocol::kStatusDetailsHeader, details)};
    nghttp2_submit_response(session_, id, headers, details.empty() ? 4 : 5, nullptr);
    flush();
  }

  IoContext io_;
  std::shared_ptr<ServerContext> context_;
  std::shared_ptr<net::ConnectionSet<GrpcConnection>> set_;
  std::map<std::int32_t, std::unique_ptr<ServerStream>> streams_;
  asio::steady_timer close_timer_;
};

GrpcServer::GrpcServer(std::shared_ptr<ServerContext> context, net::NetworkThreads& threads)
    : context_(std::move(context)),
      threads_(threads),
      accept_io_(threads_.next()),
      listener_(*accept_io_, context_->options.host, context_->options.port),
      connections_(std::make_shared<net::ConnectionSet<GrpcConnection>>()) {}

void GrpcServer::start() {
  listener_.start([this] { return threads_.next(); },
                  [this](asio::ip::tcp::socket socket, IoContext io) {
                    auto connection = std::make_shared<GrpcConnection>(std::move(socket), io,
                                                                       context_, connections_);
                    if (!connections_->add(connection)) return;  // stopping: it closes now
                    asio::post(*io, [connection] { connection->start(); });
                  });
}

void GrpcServer::stop() {
  listener_.close();
  for (auto& connection : connections_->close()) {
    auto io = connection->io_context();
    asio::post(*io, [connection] { connection->shutdown(); });
  }
}

}  // namespace sonic::server

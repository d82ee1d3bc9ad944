#include "sonic/grpc/server.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "control_service.hpp"
#include "h2_session.hpp"
#include "infer_codec.hpp"
#include "pb_convert.hpp"
#include "protocol.hpp"
#include "shm_registry.hpp"
#include "sonic/version.hpp"

namespace sonic::grpc {

namespace {

// One request stream on the server.
struct ServerStream {
  explicit ServerStream(std::size_t max_bytes) : max_message_bytes(max_bytes) {}
  std::size_t max_message_bytes;
  std::string path;
  std::string content_type;
  std::string encoding;
  std::optional<std::chrono::nanoseconds> timeout;
  Clock::time_point started = Clock::now();
  std::optional<MessageReader> reader;  // made when the path is known
  std::optional<Error> error;           // a receive error to answer with
  std::shared_ptr<OutgoingBody> response;
  bool answered = false;
};

using IoContext = std::shared_ptr<asio::io_context>;

}  // namespace

class ServerConnection;

struct Server::Impl {
  Impl(std::shared_ptr<CpuExecutor> exec, ServerOptions opts)
      : executor(std::move(exec)), options(std::move(opts)) {}

  void accept_next();

  std::shared_ptr<CpuExecutor> executor;
  ServerOptions options;
  SharedMemoryRegistry shared_memory;
  std::vector<IoContext> contexts;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards;
  std::vector<std::thread> threads;
  std::unique_ptr<asio::ip::tcp::acceptor> acceptor;
  std::size_t next_context = 0;
  std::uint16_t bound_port = 0;
  std::mutex mutex;
  std::vector<std::weak_ptr<ServerConnection>> connections;
  bool started = false;
  bool stopped = false;
};

/// One client connection: decodes calls, runs inference on the executor, answers.
class ServerConnection final : public H2Session {
 public:
  ServerConnection(asio::ip::tcp::socket socket, IoContext io, Server::Impl& server)
      : H2Session(std::move(socket)),
        io_(std::move(io)),
        server_(server),
        executor_(server.executor),
        close_timer_(*io_) {}

  IoContext io_context() const { return io_; }

  void start() {
    if (lost_) return;  // stopped before it started
    nghttp2_session_callbacks* callbacks = nullptr;
    nghttp2_session_callbacks_new(&callbacks);
    install_common_callbacks(callbacks);
    nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks,
                                                            &ServerConnection::on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, &ServerConnection::on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks,
                                                              &ServerConnection::on_data_chunk);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks,
                                                         &ServerConnection::on_frame_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks,
                                                           &ServerConnection::on_stream_close);
    int rv = nghttp2_session_server_new(&session_, callbacks, this);
    nghttp2_session_callbacks_del(callbacks);
    if (rv != 0) return close_socket();
    std::error_code ignored;
    socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
    H2Settings settings;
    settings.stream_window_bytes = server_.options.stream_window_bytes;
    settings.connection_window_bytes = server_.options.connection_window_bytes;
    settings.max_concurrent_streams = server_.options.max_concurrent_streams;
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
    auto self = std::static_pointer_cast<ServerConnection>(shared_from_this());
    close_timer_.expires_after(std::chrono::milliseconds(500));
    close_timer_.async_wait([self](std::error_code ec) {
      if (!ec) self->fail("server stopping");
    });
  }

 private:
  void on_connection_lost(const std::string&) override {
    close_timer_.cancel();
    streams_.clear();
  }

  void on_body_end(std::int32_t stream_id, std::uint32_t* flags) override {
    // Trailers follow the body: grpc-status 0.
    *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
    nghttp2_nv trailers[] = {make_header("grpc-status", "0")};
    nghttp2_submit_trailer(session_, stream_id, trailers, 1);
  }

  ServerStream* find(std::int32_t id) {
    auto it = streams_.find(id);
    return it == streams_.end() ? nullptr : it->second.get();
  }

  static int on_begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    auto* self = static_cast<ServerConnection*>(user_data);
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
      self->streams_[frame->hd.stream_id] =
          std::make_unique<ServerStream>(self->server_.options.max_message_bytes);
    }
    return 0;
  }

  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                       std::size_t namelen, const std::uint8_t* value, std::size_t valuelen,
                       std::uint8_t, void* user_data) {
    auto* self = static_cast<ServerConnection*>(user_data);
    ServerStream* stream = self->find(frame->hd.stream_id);
    if (!stream) return 0;
    std::string_view n(reinterpret_cast<const char*>(name), namelen);
    std::string_view v(reinterpret_cast<const char*>(value), valuelen);
    if (n == ":path") {
      stream->path = std::string(v);
    } else if (n == "content-type") {
      stream->content_type = std::string(v);
    } else if (n == "grpc-timeout") {
      stream->timeout = parse_grpc_timeout(v);
    } else if (n == "grpc-encoding") {
      stream->encoding = std::string(v);
    }
    return 0;
  }

  static int on_data_chunk(nghttp2_session*, std::uint8_t, std::int32_t stream_id,
                           const std::uint8_t* data, std::size_t len, void* user_data) {
    auto* self = static_cast<ServerConnection*>(user_data);
    ServerStream* stream = self->find(stream_id);
    if (!stream || stream->error || stream->answered) return 0;
    if (!stream->reader) {
      bool infer = stream->path == std::string(kServicePrefix) + "ModelInfer";
      stream->reader.emplace(infer ? kRawInputField : 0, stream->max_message_bytes);
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
    auto* self = static_cast<ServerConnection*>(user_data);
    bool request_end = (frame->hd.type == NGHTTP2_DATA || frame->hd.type == NGHTTP2_HEADERS) &&
                       (frame->hd.flags & NGHTTP2_FLAG_END_STREAM);
    if (request_end) self->dispatch(frame->hd.stream_id);
    return 0;
  }

  static int on_stream_close(nghttp2_session*, std::int32_t stream_id, std::uint32_t,
                             void* user_data) {
    static_cast<ServerConnection*>(user_data)->streams_.erase(stream_id);
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
    if (stream->path.rfind(kServicePrefix, 0) != 0) {
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
    std::string method = stream->path.substr(kServicePrefix.size());
    if (method == "ModelInfer") return infer(id, std::move(message));
    control(id, method, message.envelope);
  }

  void infer(std::int32_t id, ReceivedMessage message) {
    auto decoded = decode_infer_request(std::move(message));
    if (!decoded) return respond_error(id, decoded.error());
    // Inputs in shared memory become views of their regions; outputs bound for regions are
    // written there once the model ran.
    auto request = server_.shared_memory.bind_inputs(*decoded);
    if (!request) return respond_error(id, request.error());
    auto targets = server_.shared_memory.output_targets(*request);
    if (!targets) return respond_error(id, targets.error());
    auto& registry = server_.shared_memory;
    std::size_t max_bytes = server_.options.max_message_bytes;
    if (server_.options.inline_models) {
      return answer(id, encode_answer(executor_->infer(*request), *targets, registry, max_bytes));
    }
    std::weak_ptr<ServerConnection> weak =
        std::static_pointer_cast<ServerConnection>(shared_from_this());
    IoContext io = io_;
    executor_->infer_async(
        std::move(*request), [weak, io, id, max_bytes, &registry,
                              targets = std::move(*targets)](Result<InferResult> result) {
          // On an executor thread: encode here, answer on the connection's thread.
          auto body = encode_answer(std::move(result), targets, registry, max_bytes);
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
    return encode_infer_response(*result, max_bytes);
  }

  void answer(std::int32_t id, Result<std::shared_ptr<OutgoingBody>> body) {
    if (body) return respond(id, std::move(*body));
    respond_error(id, body.error());
  }

  void control(std::int32_t id, const std::string& method, const std::string& bytes) {
    ControlContext context{*executor_, server_.options,
                           server_.options.shared_memory ? &server_.shared_memory : nullptr};
    auto reply = answer_control(context, method, bytes);
    if (!reply) return respond_error(id, reply.error());
    auto body = std::make_shared<OutgoingBody>();
    body->append_owned(std::move(*reply));
    if (auto ok = body->finish(server_.options.max_message_bytes); !ok)
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
    nghttp2_nv headers[] = {make_header(":status", "200"),
                            make_header("content-type", "application/grpc")};
    nghttp2_data_provider provider = body_provider(stream->response.get());
    nghttp2_submit_response(session_, id, headers, 2, &provider);
    flush();
  }

  // A trailers-only response: the status travels in the only HEADERS frame.
  void respond_error(std::int32_t id, const Error& error) {
    ServerStream* stream = find(id);
    if (!stream || stream->answered || lost_) return;
    stream->answered = true;
    std::string code = std::to_string(static_cast<int>(error.code()));
    std::string message = percent_encode(error.message());
    nghttp2_nv headers[] = {make_header(":status", "200"),
                            make_header("content-type", "application/grpc"),
                            make_header("grpc-status", code), make_header("grpc-message", message)};
    nghttp2_submit_response(session_, id, headers, 4, nullptr);
    flush();
  }

  IoContext io_;
  Server::Impl& server_;
  std::shared_ptr<CpuExecutor> executor_;
  std::map<std::int32_t, std::unique_ptr<ServerStream>> streams_;
  asio::steady_timer close_timer_;
};

void Server::Impl::accept_next() {
  IoContext io = contexts[next_context++ % contexts.size()];
  acceptor->async_accept(*io, [this, io](std::error_code ec, asio::ip::tcp::socket socket) {
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor->is_open()) return;
      return accept_next();  // e.g. too many open files: keep serving the others
    }
    auto connection = std::make_shared<ServerConnection>(std::move(socket), io, *this);
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (stopped) return;  // raced with stop(): the socket closes with `connection`
      connections.erase(
          std::remove_if(connections.begin(), connections.end(),
                         [](const std::weak_ptr<ServerConnection>& c) { return c.expired(); }),
          connections.end());
      connections.push_back(connection);
    }
    asio::post(*io, [connection] { connection->start(); });
    accept_next();
  });
}

Server::Server(std::shared_ptr<CpuExecutor> executor, ServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(executor), std::move(options))) {
  if (!impl_->executor) throw Error(StatusCode::InvalidArgument, "a Server needs an executor");
}

Server::~Server() { stop(); }

void Server::start() {
  Impl& s = *impl_;
  if (s.started) return;
  std::size_t n = std::max<std::size_t>(1, s.options.io_threads);
  for (std::size_t i = 0; i < n; ++i) {
    s.contexts.push_back(std::make_shared<asio::io_context>(1));
    s.guards.push_back(asio::make_work_guard(*s.contexts.back()));
  }
  std::error_code ec;
  auto address = asio::ip::make_address(s.options.host, ec);
  if (ec)
    throw Error(StatusCode::InvalidArgument,
                "cannot bind '" + s.options.host + "': not an IP address");
  asio::ip::tcp::endpoint endpoint(address, s.options.port);
  s.acceptor = std::make_unique<asio::ip::tcp::acceptor>(*s.contexts.front());
  s.acceptor->open(endpoint.protocol(), ec);
  if (!ec) s.acceptor->set_option(asio::ip::tcp::acceptor::reuse_address(true), ec);
  if (!ec) s.acceptor->bind(endpoint, ec);
  if (!ec) s.acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    throw Error(StatusCode::Unavailable, "cannot listen on " + s.options.host + ":" +
                                             std::to_string(s.options.port) + ": " + ec.message());
  }
  s.bound_port = s.acceptor->local_endpoint().port();
  s.started = true;
  s.accept_next();
  for (auto& io : s.contexts) s.threads.emplace_back([io] { io->run(); });
}

std::uint16_t Server::port() const { return impl_->bound_port; }

std::size_t Server::shared_memory_regions() const {
  std::size_t n = 0;
  for (bool cuda : {false, true}) {
    if (auto regions = impl_->shared_memory.status({}, cuda)) n += regions->size();
  }
  return n;
}

void Server::stop() {
  Impl& s = *impl_;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.started || s.stopped) return;
    s.stopped = true;
  }
  asio::post(*s.contexts.front(), [&s] {
    std::error_code ignored;
    s.acceptor->close(ignored);
  });
  std::vector<std::weak_ptr<ServerConnection>> connections;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    connections.swap(s.connections);
  }
  for (auto& weak : connections) {
    if (auto connection = weak.lock()) {
      auto io = connection->io_context();
      asio::post(*io, [connection] { connection->shutdown(); });
    }
  }
  for (auto& guard : s.guards) guard.reset();
  for (auto& thread : s.threads) thread.join();
  s.threads.clear();
}

}  // namespace sonic::grpc

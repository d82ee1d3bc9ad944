// A gRPC connection's life and its HTTP/2 side: the handshake, nghttp2's callbacks, which
// calls are refused as their headers arrive, and shutdown.
#include <algorithm>

#include "control_service.hpp"
#include "grpc_connection.hpp"
#include "health_service.hpp"
#include "net/peer_user.hpp"
#include "protocol/infer_codec.hpp"

namespace sonic::server {

using protocol::OutgoingBody;
using protocol::ReceivedMessage;

namespace {

// A header block that decodes to this many times the limit is an attack (an HPACK bomb), not
// a client with too much metadata: the connection ends there, before more is decoded. So does
// a second header list over the limit (a client that honours the limit the server announced
// never sends one; one that did not know gets a clear error the first time).
constexpr std::size_t kHeaderBombFactor = 4;

}  // namespace

GrpcConnection::GrpcConnection(asio::ip::tcp::socket socket, IoContext io,
                               std::shared_ptr<ServerContext> context,
                               std::shared_ptr<net::ConnectionSet<GrpcConnection>> set,
                               ConnectionSlot slot)
    : H2Session(std::move(socket), net::ReadBuffer::kThreads, context->grpc_tls),
      io_(std::move(io)),
      context_(std::move(context)),
      set_(std::move(set)),
      slot_(std::move(slot)),
      limits_(context_->options.limits),
      budget_(std::make_shared<ConnectionBudget>(context_->memory,
                                                 limits_.max_connection_buffered_bytes)),
      models_(context_, io_, [this] { flush(); }),
      close_timer_(*io_),
      watch_timer_(*io_),
      admission_timer_(*io_) {}

void GrpcConnection::start() {
  if (lost_) return;  // stopped before it started
  watch();            // the handshake timeout covers TLS's handshake too
  auto self = std::static_pointer_cast<GrpcConnection>(shared_from_this());
  link_.handshake(std::chrono::milliseconds(0), self, [this](std::string why) {
    if (lost_) return;
    if (!why.empty()) return fail(why);
    begin_http2();
  });
}

// Sets up the HTTP/2 session over the (secure, if TLS) link, and starts reading.
void GrpcConnection::begin_http2() {
  nghttp2_session_callbacks* callbacks = nullptr;
  nghttp2_session_callbacks_new(&callbacks);
  install_common_callbacks(callbacks);
  nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks,
                                                          &GrpcConnection::on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, &GrpcConnection::on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, &GrpcConnection::on_frame_recv);
  nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, &GrpcConnection::on_frame_send);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks,
                                                         &GrpcConnection::on_stream_close);
  nghttp2_option* option = nullptr;
  nghttp2_option_new(&option);
  // Flow control is ours: streams get window as memory allows (see on_data).
  nghttp2_option_set_no_auto_window_update(option, 1);
  int rv = nghttp2_session_server_new2(&session_, callbacks, this, option);
  nghttp2_option_del(option);
  nghttp2_session_callbacks_del(callbacks);
  if (rv != 0) return close_socket();
  std::error_code ignored;
  link_.socket().set_option(asio::ip::tcp::no_delay(true), ignored);
  net::H2Settings settings;
  settings.stream_window_bytes = kInitialStreamWindow;
  settings.connection_window_bytes = context_->options.connection_window_bytes;
  settings.max_concurrent_streams = context_->options.max_concurrent_streams;
  settings.max_header_list_bytes =
      static_cast<std::uint32_t>(std::min<std::size_t>(limits_.max_header_list_bytes, 0xffffffffu));
  submit_settings(settings, true);
  start_reading();
  flush();
}

/// Ends the connection: GOAWAY, then close once it is written (a peer that does not read
/// gets half a second). Runs on the connection's thread.
void GrpcConnection::shutdown() {
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

void GrpcConnection::evict() {
  if (!lost_) fail("closed to make room for a new connection: it had not begun a call");
}

void GrpcConnection::on_connection_lost(const std::string&) {
  close_timer_.cancel();
  watch_timer_.cancel();
  admission_timer_.cancel();
  for (std::size_t i = 0; i < waiting_.size(); ++i) context_->memory->waiting_ends();
  waiting_.clear();
  streams_.clear();
  models_.cancel_all();  // nobody waits for their answers any more
  context_->shared_memory.drop_connection(slot_.id());
  set_->remove(this);
}

void GrpcConnection::on_body_end(std::int32_t stream_id, std::uint32_t* flags) {
  // Trailers follow the body: grpc-status 0, or the error that ended a stream.
  *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
  const ServerStream* stream = find(stream_id);
  if (!stream || !stream->final_error) {
    nghttp2_nv trailers[] = {net::make_header("grpc-status", "0")};
    nghttp2_submit_trailer(session_, stream_id, trailers, 1);
    return;
  }
  std::string code = std::to_string(static_cast<int>(stream->final_error->code()));
  std::string message = protocol::percent_encode(stream->final_error->message());
  nghttp2_nv trailers[] = {net::make_header("grpc-status", code),
                           net::make_header("grpc-message", message)};
  nghttp2_submit_trailer(session_, stream_id, trailers, 2);
}

ServerStream* GrpcConnection::find(std::int32_t id) {
  auto it = streams_.find(id);
  return it == streams_.end() ? nullptr : it->second.get();
}

// Who this connection's client is, for the shared memory extension: asked of the kernel once.
const ShmClient& GrpcConnection::shm_client() {
  if (!shm_client_) {
    shm_client_.emplace();
    shm_client_->connection = slot_.id();
    if (context_->options.shared_memory_access == SharedMemoryAccess::Owner) {
      shm_client_->user = net::local_peer_user(link_.socket());
    }
  }
  return *shm_client_;
}

int GrpcConnection::on_begin_headers(nghttp2_session* session, const nghttp2_frame* frame,
                                     void* user_data) {
  auto* self = static_cast<GrpcConnection*>(user_data);
  if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
  // A connection chosen to make room at the cap (it is closing) takes no call.
  if (!self->first_call_.serving() || self->waiting_.size() >= kMaxWaitingStreams ||
      self->context_->memory->crowded()) {
    // Too many calls wait for memory already: refused unprocessed, which a client may retry
    // (here or on another server). Its headers and data are ignored.
    nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id,
                              NGHTTP2_REFUSED_STREAM);
    return 0;
  }
  self->streams_[frame->hd.stream_id] = std::make_unique<ServerStream>();
  self->activity_.last_busy = WatchClock::now();
  return 0;
}

int GrpcConnection::on_header(nghttp2_session*, const nghttp2_frame* frame,
                              const std::uint8_t* name, std::size_t namelen,
                              const std::uint8_t* value, std::size_t valuelen, std::uint8_t,
                              void* user_data) {
  auto* self = static_cast<GrpcConnection*>(user_data);
  ServerStream* stream = self->find(frame->hd.stream_id);
  if (!stream) return 0;
  const std::size_t limit = self->limits_.max_header_list_bytes;
  stream->header_bytes += namelen + valuelen + 32;
  if (stream->header_bytes > limit) {
    if (stream->header_bytes > kHeaderBombFactor * limit) return NGHTTP2_ERR_CALLBACK_FAILURE;
    if (!stream->error) {
      if (++self->oversized_header_lists_ > 1) return NGHTTP2_ERR_CALLBACK_FAILURE;
      stream->error = Error(StatusCode::ResourceExhausted,
                            "the request's header list exceeds the server's limit of " +
                                std::to_string(limit) + " bytes");
    }
    return 0;  // the rest of the block is decoded (HPACK needs it) but not kept
  }
  std::string_view n(reinterpret_cast<const char*>(name), namelen);
  std::string_view v(reinterpret_cast<const char*>(value), valuelen);
  if (n == ":path") {
    stream->path = std::string(v);
    if (v.rfind(protocol::kServicePrefix, 0) == 0) {
      stream->method = std::string(v.substr(protocol::kServicePrefix.size()));
    }
  } else if (n == "content-type") {
    stream->content_type = std::string(v);
  } else if (n == "grpc-timeout") {
    stream->timeout = protocol::parse_grpc_timeout(v);
  } else if (n == "grpc-encoding") {
    stream->encoding = std::string(v);
  } else if (n == "grpc-accept-encoding") {
    stream->accept_encoding = std::string(v);
  } else if (n == "authorization") {  // bounded by the header list's limit above
    stream->authorization = std::string(v);
  }
  return 0;
}

const protocol::OutgoingBody* GrpcConnection::sending_body(std::int32_t stream_id) {
  const ServerStream* stream = find(stream_id);
  return stream ? stream->response.get() : nullptr;
}

protocol::MessageReader::Destination GrpcConnection::read_destination(std::int32_t stream_id) {
  const ServerStream* stream = find(stream_id);
  // A stream whose messages may be compressed takes its bytes through `deferred` (on_data).
  if (!stream || stream->error || stream->answered || !stream->reader || stream->paced) return {};
  return stream->reader->tensor_destination();
}

int GrpcConnection::on_data(std::int32_t stream_id, const std::uint8_t* data, std::size_t len) {
  activity_.last_read = WatchClock::now();
  // The connection's window never waits: streams do, each in its own window.
  nghttp2_session_consume_connection(session_, len);
  ServerStream* stream = find(stream_id);
  if (!stream || stream->error || stream->answered) {
    nghttp2_session_consume_stream(session_, stream_id, len);  // ignored, held nowhere
    return 0;
  }
  stream->last_data = activity_.last_read;
  if (!stream->reader) {
    bool infer = stream->method == protocol::kModelInfer || stream->streaming();
    // A health check is read without the token: it may hold no more than its service name.
    const std::size_t limit = stream->path == kHealthCheckPath
                                  ? kMaxHealthCheckRequestBytes
                                  : context_->options.max_message_bytes;
    stream->reader.emplace(infer ? protocol::kRawInputField : 0, limit, budget_);
    // Known: refusal() answered an unknown one when the headers came.
    const Compression encoding =
        protocol::parse_encoding(stream->encoding).value_or(Compression::None);
    stream->reader->set_encoding(encoding);
    stream->reader->set_inflate_ratio(context_->options.max_inflate_ratio);
    stream->paced = encoding != Compression::None;
  }
  if (stream->paced) {
    // Its messages may be compressed: inflated within the connection's turns (take_deferred).
    stream->deferred.append(reinterpret_cast<const char*>(data), len);
    take_deferred(stream_id);
    return 0;
  }
  take(stream_id, *stream, data, len);
  return 0;
}

void GrpcConnection::take(std::int32_t stream_id, ServerStream& stream, const std::uint8_t* data,
                          std::size_t len) {
  const std::size_t kept_before = stream.reader->kept_bytes();
  if (auto ok = stream.reader->feed(data, len); !ok) {
    stream.error = ok.error();
  } else if (!stream.streaming() && stream.reader->messages().size() > 1) {
    stream.error =
        Error(StatusCode::InvalidArgument, "a unary call takes exactly one request message");
  }
  if (stream.error) {
    // Answer at once and ignore the rest of the stream: nothing more is buffered for it.
    nghttp2_session_consume_stream(session_, stream_id, len);
    end_with_error(stream_id, *stream.error);
    return;
  }
  if (stream.streaming()) take_stream_messages(stream_id, stream);
  account_window(stream_id, stream, len, stream.reader->kept_bytes() - kept_before);
}

int GrpcConnection::on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
  auto* self = static_cast<GrpcConnection*>(user_data);
  if (frame->hd.type == NGHTTP2_SETTINGS && !(frame->hd.flags & NGHTTP2_FLAG_ACK)) {
    self->activity_.handshake_done = true;
  }
  bool request_end = (frame->hd.type == NGHTTP2_DATA || frame->hd.type == NGHTTP2_HEADERS) &&
                     (frame->hd.flags & NGHTTP2_FLAG_END_STREAM);
  if (request_end) {
    ServerStream* stream = self->find(frame->hd.stream_id);
    if (!stream) return 0;
    stream->request_ended = true;
    // A message still waiting for memory, or to be inflated, is dispatched once it is read.
    if (!stream->waiting && !stream->deferring()) self->dispatch(frame->hd.stream_id);
    return 0;
  }
  if (frame->hd.type == NGHTTP2_HEADERS) {
    ServerStream* stream = self->find(frame->hd.stream_id);
    if (stream && !stream->error && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
      stream->error = self->refusal(*stream);
    }
    if (stream && stream->error) self->respond_error(frame->hd.stream_id, *stream->error);
  }
  return 0;
}

// A call this server does not serve is answered UNIMPLEMENTED as soon as its headers arrive,
// as gRPC servers answer (Triton's among them): a client that keeps a stream open, as
// ModelStreamInfer clients do, must not wait for its end, or its deadline, to learn it.
std::optional<Error> GrpcConnection::refusal(const ServerStream& stream) const {
  // First: a caller without the token learns nothing else (not even which methods exist),
  // and none of its message is read.
  if (stream.path.rfind(kHealthServicePrefix, 0) == 0) return health_refusal(stream);
  if (auto refused = context_->authenticator.refusal(stream.authorization)) return refused;
  if (stream.path.rfind(protocol::kServicePrefix, 0) != 0) {
    return Error(StatusCode::Unimplemented, "unknown service in path '" + stream.path + "'");
  }
  const std::string& method = stream.method;
  if (method != protocol::kModelInfer && method != kStreamMethod &&
      !served_control(method, context_->options.shared_memory)) {
    return unimplemented(method);
  }
  // gRPC: a message compressed in a way the server does not know is UNIMPLEMENTED, and the
  // answer says what the server accepts (grpc-accept-encoding, sent with every answer).
  if (!stream.encoding.empty() && !protocol::parse_encoding(stream.encoding)) {
    return Error(StatusCode::Unimplemented, "grpc-encoding '" + stream.encoding +
                                                "' is not supported (supported: " +
                                                std::string(protocol::kAcceptEncoding) + ")");
  }
  return std::nullopt;
}

// The health service answers without the bearer token: Kubernetes' gRPC probes send no
// metadata, and SERVING or NOT_SERVING is all it tells. As Triton, only Check is served.
std::optional<Error> GrpcConnection::health_refusal(const ServerStream& stream) const {
  if (stream.path != kHealthCheckPath) {
    return Error(StatusCode::Unimplemented,
                 "method " + stream.path.substr(kHealthServicePrefix.size()) +
                     " of grpc.health.v1.Health is not implemented by this server (as in "
                     "Triton, only Check is)");
  }
  if (!stream.encoding.empty() && !protocol::parse_encoding(stream.encoding)) {
    return Error(StatusCode::Unimplemented,
                 "grpc-encoding '" + stream.encoding + "' is not supported");
  }
  return std::nullopt;
}

// A stream answered before its client finished sending is reset with NO_ERROR after the
// answer has been sent (RFC 9113 §8.1), so that it closes instead of carrying bytes nobody
// reads. Not before: nghttp2 sends a RST_STREAM ahead of queued frames and then drops the
// stream's HEADERS, and gRPC clients report a reset without a status as INTERNAL.
int GrpcConnection::on_frame_send(nghttp2_session* session, const nghttp2_frame* frame,
                                  void* user_data) {
  if (frame->hd.type != NGHTTP2_HEADERS || !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
    return 0;
  }
  auto* self = static_cast<GrpcConnection*>(user_data);
  ServerStream* stream = self->find(frame->hd.stream_id);
  if (stream && stream->reset_after_answer) {
    stream->reset_after_answer = false;
    nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id, NGHTTP2_NO_ERROR);
  }
  return 0;
}

// A stream closed before it was answered in full (its client reset it: a cancel, or its
// deadline) takes its requests back: its caller is cancelled, so that the executor's queues let
// them go, and those waiting in the connection's share leave at once. As Triton cancels the
// requests of a cancelled gRPC call (infer_handler.h, IssueRequestCancellation).
int GrpcConnection::on_stream_close(nghttp2_session*, std::int32_t stream_id, std::uint32_t,
                                    void* user_data) {
  auto* self = static_cast<GrpcConnection*>(user_data);
  auto it = self->streams_.find(stream_id);
  if (it == self->streams_.end()) return 0;
  std::shared_ptr<Caller> abandoned;
  if (it->second->caller && !it->second->answered) abandoned = std::move(it->second->caller);
  self->streams_.erase(it);
  if (abandoned) {
    abandoned->cancel();
    self->models_.withdraw_cancelled();
  }
  return 0;
}

}  // namespace sonic::server

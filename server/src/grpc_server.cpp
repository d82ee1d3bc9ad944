#include "grpc_server.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <optional>

#include "connection_watch.hpp"
#include "control_service.hpp"
#include "health_service.hpp"
#include "model_queue.hpp"
#include "net/h2_session.hpp"
#include "net/peer_user.hpp"
#include "protocol/grpc_wire.hpp"
#include "protocol/infer_codec.hpp"
#include "request_options.hpp"

namespace sonic::server {

namespace {

using protocol::OutgoingBody;
using protocol::ReceivedMessage;

// How often a connection whose calls wait for memory looks again.
constexpr std::chrono::milliseconds kAdmissionPoll{5};
// A new stream's window: enough for the message prefix and small requests. A message waiting
// for memory holds at most this much; an admitted one gets kAdmittedStreamWindow. A 64 KiB
// tensor and its envelope fit in it: at exactly 64 KiB their last bytes waited a round trip
// for the window update, a quarter of the throughput of 64 KiB requests one at a time.
constexpr std::uint32_t kInitialStreamWindow = (64 + 4) * 1024;
constexpr std::uint32_t kAdmittedStreamWindow = 16u << 20;
// Calls of one connection waiting for memory beyond which its new calls are refused.
constexpr std::size_t kMaxWaitingStreams = 64;
// A header block that decodes to this many times the limit is an attack (an HPACK bomb), not
// a client with too much metadata: the connection ends there, before more is decoded. So does
// a second header list over the limit (a client that honours the limit the server announced
// never sends one; one that did not know gets a clear error the first time).
constexpr std::size_t kHeaderBombFactor = 4;

// Triton's streaming inference: many requests on one call, each answered on it.
constexpr std::string_view kStreamMethod = "ModelStreamInfer";
// Requests of one stream taken at once (queued for or in a model, or answered out of turn);
// the stream's further requests wait unread, and its client in its flow-control window.
constexpr std::size_t kMaxStreamRequests = 64;

// One request stream on the server.
struct ServerStream {
  std::string path;
  std::string method;  // of the inference service, from the path; empty for another service
  std::string content_type;
  std::string encoding;         // grpc-encoding: how its messages are compressed
  std::string accept_encoding;  // grpc-accept-encoding: how its answers may be
  std::string authorization;    // its "authorization" header
  std::optional<std::chrono::nanoseconds> timeout;
  Clock::time_point started = Clock::now();
  std::optional<protocol::MessageReader> reader;  // made when the first DATA arrives
  std::optional<Error> error;                     // a receive error to answer with
  std::size_t header_bytes = 0;                   // as RFC 9113 counts a header list
  WatchClock::time_point last_data = WatchClock::now();
  bool window_opened = false;  // its message was admitted and its window widened
  bool waiting = false;        // in the connection's queue for memory
  std::shared_ptr<OutgoingBody> response;
  BudgetHold response_bytes;
  bool request_ended = false;  // the client sent END_STREAM
  bool answered = false;
  bool reset_after_answer = false;  // answered before request_ended: reset once it is sent

  // ModelStreamInfer: `response` is the stream's open body once its headers are sent.
  bool streaming() const { return method == kStreamMethod; }
  std::size_t in_flight = 0;            // requests taken and not yet answered in full
  std::deque<ReceivedMessage> backlog;  // requests read while in_flight was at its limit
  std::size_t unconsumed = 0;           // window held back while the backlog waits
  std::uint64_t next_slot = 0;          // in-order answers: the next request's number
  std::uint64_t next_to_send = 0;       // and the number of the next answer to send
  std::map<std::uint64_t, std::shared_ptr<OutgoingBody>> early;  // answers ahead of their turn
  std::optional<Error> final_error;                              // ends the stream with this status
  bool starting = false;                                         // inside start_stream_requests()
};

using IoContext = std::shared_ptr<asio::io_context>;

// An answer made on an executor thread: the body, and the bytes it holds until written.
struct Answer {
  Result<std::shared_ptr<OutgoingBody>> body;
  BudgetHold held;
  Compression encoding = Compression::None;  // how the body is compressed (None: it is not)
};

// How a ModelInfer answer is compressed for a client that accepts `accept_encoding`, as gRPC
// core chooses for a compression level (grpc_compression_algorithm_for_level: gzip and deflate
// ranked in that order; low takes the first the client accepts, medium and high the last).
Compression response_encoding(ServerOptions::ResponseCompression level,
                              std::string_view accept_encoding) {
  using Level = ServerOptions::ResponseCompression;
  if (level == Level::None) return Compression::None;
  const bool gzip = protocol::accepts(accept_encoding, Compression::Gzip);
  const bool deflate = protocol::accepts(accept_encoding, Compression::Deflate);
  if (!gzip && !deflate) return Compression::None;
  if (level == Level::Low) return gzip ? Compression::Gzip : Compression::Deflate;
  return deflate ? Compression::Deflate : Compression::Gzip;
}

}  // namespace

/// One client connection: decodes calls, runs inference on the executor, answers. Flow control
/// is the server's: a request message begins in a small stream window and is read on only once
/// the memory budget admits its declared length (then its window widens); until then its
/// client waits, and what it sent ahead stays in the small window.
class GrpcConnection final : public net::H2Session {
 public:
  GrpcConnection(asio::ip::tcp::socket socket, IoContext io, std::shared_ptr<ServerContext> context,
                 std::shared_ptr<net::ConnectionSet<GrpcConnection>> set, ConnectionSlot slot)
      : H2Session(std::move(socket), net::ReadBuffer::kThreads, context->grpc_tls),
        io_(std::move(io)),
        context_(std::move(context)),
        set_(std::move(set)),
        slot_(std::move(slot)),
        limits_(context_->options.limits),
        budget_(std::make_shared<ConnectionBudget>(context_->memory,
                                                   limits_.max_connection_buffered_bytes)),
        models_(context_->executor->threads()),
        close_timer_(*io_),
        watch_timer_(*io_),
        admission_timer_(*io_) {}

  IoContext io_context() const { return io_; }

  void start() {
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
  void begin_http2() {
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
    settings.max_header_list_bytes = static_cast<std::uint32_t>(
        std::min<std::size_t>(limits_.max_header_list_bytes, 0xffffffffu));
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
    watch_timer_.cancel();
    admission_timer_.cancel();
    for (std::size_t i = 0; i < waiting_.size(); ++i) context_->memory->waiting_ends();
    waiting_.clear();
    streams_.clear();
    context_->shared_memory.drop_connection(slot_.id());
    set_->remove(this);
  }

  void on_body_end(std::int32_t stream_id, std::uint32_t* flags) override {
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

  ServerStream* find(std::int32_t id) {
    auto it = streams_.find(id);
    return it == streams_.end() ? nullptr : it->second.get();
  }

  // ---- Timeouts and memory ---------------------------------------------------------------

  void watch() {
    auto self = std::static_pointer_cast<GrpcConnection>(shared_from_this());
    watch_timer_.expires_after(watch_interval(limits_));
    watch_timer_.async_wait([self](std::error_code ec) {
      if (ec || self->lost_) return;
      const auto now = WatchClock::now();
      self->reset_stalled_streams(now);
      ConnectionState state;
      state.busy = !self->streams_.empty();
      state.unwritten = self->unwritten_bytes();
      state.last_write = self->last_write_progress();
      if (state.busy) self->activity_.last_busy = now;
      if (auto end = overdue(self->activity_, state, self->limits_, now)) {
        if (end->idle) return self->shutdown();  // GOAWAY first, as gRPC servers do
        return self->fail(end->why);
      }
      self->watch();
    });
  }

  // Admitted messages whose client stopped sending in the middle: reset, so that what they
  // hold and were promised goes back to the budget. (Messages waiting for memory wait for us.)
  void reset_stalled_streams(WatchClock::time_point now) {
    if (limits_.stall_timeout.count() == 0) return;
    bool reset = false;
    for (auto& [id, stream] : streams_) {
      if (!stream->reader || stream->answered || !stream->reader->mid_message() ||
          stream->reader->waiting_admission() || now - stream->last_data <= limits_.stall_timeout) {
        continue;
      }
      stream->reader->abandon();
      stream->answered = true;
      nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
      reset = true;
    }
    if (reset) flush();
  }

  // After `stream` took `len` bytes, `kept` of them held for admission. A message admitted now
  // gets a larger window if it needs one; the window gets back what was consumed, where the
  // client may still need it; a message that waits joins the queue.
  //
  // A unary call's single message that fits its first window needs neither: its stream gets
  // no WINDOW_UPDATE, which would cost the server a socket write per request for nothing.
  void account_window(std::int32_t id, ServerStream& stream, std::size_t len, std::size_t kept) {
    protocol::MessageReader& reader = *stream.reader;
    if (!reader.waiting_admission() && reader.mid_message() && !stream.window_opened &&
        (stream.streaming() || reader.bytes_to_come() > window_left(id))) {
      stream.window_opened = true;
      nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, id, kAdmittedStreamWindow);
    }
    const bool client_needs_window = stream.streaming() || stream.window_opened;
    if (len > kept && client_needs_window && !stream.backlog.empty()) {
      stream.unconsumed += len - kept;  // its requests wait: so does its client
    } else if (len > kept && client_needs_window) {
      nghttp2_session_consume_stream(session_, id, len - kept);
    }
    if (reader.waiting_admission() && !stream.waiting) {
      stream.waiting = true;
      waiting_.push_back(id);
      context_->memory->waiting_begins();
      if (waiting_.size() == 1) poll_admission();
    }
  }

  // What the client of stream `id` may still send before it needs a WINDOW_UPDATE.
  std::size_t window_left(std::int32_t id) const {
    return static_cast<std::size_t>(
        std::max(0, nghttp2_session_get_stream_local_window_size(session_, id)));
  }

  void poll_admission() {
    auto self = std::static_pointer_cast<GrpcConnection>(shared_from_this());
    admission_timer_.expires_after(kAdmissionPoll);
    admission_timer_.async_wait([self](std::error_code ec) {
      if (ec || self->lost_) return;
      self->admit_waiting();
      self->flush();
      if (!self->waiting_.empty()) self->poll_admission();
    });
  }

  // Waiting streams, oldest first, until one is still refused (later ones wait behind it, so
  // that a large message is not overtaken forever by small ones).
  void admit_waiting() {
    while (!waiting_.empty()) {
      const std::int32_t id = waiting_.front();
      ServerStream* stream = find(id);
      if (!stream || !stream->reader || stream->answered || !stream->reader->waiting_admission()) {
        if (stream) stream->waiting = false;
        waiting_.pop_front();
        context_->memory->waiting_ends();
        continue;
      }
      const std::size_t kept = stream->reader->kept_bytes();
      auto admitted = stream->reader->retry_admission();
      if (admitted && !*admitted) return;
      waiting_.pop_front();
      context_->memory->waiting_ends();
      stream->waiting = false;
      if (!admitted) {
        stream->error = admitted.error();
        end_with_error(id, *stream->error);
        nghttp2_session_consume_stream(session_, id, kept);
        continue;
      }
      if (stream->streaming()) take_stream_messages(id, *stream);
      account_window(id, *stream, kept, stream->reader->kept_bytes());
      if (stream->request_ended) dispatch(id);
    }
  }

  // ---- HTTP/2 callbacks ------------------------------------------------------------------

  static int on_begin_headers(nghttp2_session* session, const nghttp2_frame* frame,
                              void* user_data) {
    auto* self = static_cast<GrpcConnection*>(user_data);
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    if (self->waiting_.size() >= kMaxWaitingStreams || self->context_->memory->crowded()) {
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

  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                       std::size_t namelen, const std::uint8_t* value, std::size_t valuelen,
                       std::uint8_t, void* user_data) {
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

  const protocol::OutgoingBody* sending_body(std::int32_t stream_id) override {
    const ServerStream* stream = find(stream_id);
    return stream ? stream->response.get() : nullptr;
  }

  protocol::MessageReader::Destination read_destination(std::int32_t stream_id) override {
    const ServerStream* stream = find(stream_id);
    if (!stream || stream->error || stream->answered || !stream->reader) return {};
    return stream->reader->tensor_destination();
  }

  int on_data(std::int32_t stream_id, const std::uint8_t* data, std::size_t len) override {
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
      bool infer = stream->method == "ModelInfer" || stream->streaming();
      // A health check is read without the token: it may hold no more than its service name.
      const std::size_t limit = stream->path == kHealthCheckPath
                                    ? kMaxHealthCheckRequestBytes
                                    : context_->options.max_message_bytes;
      stream->reader.emplace(infer ? protocol::kRawInputField : 0, limit, budget_);
      // Known: refusal() answered an unknown one when the headers came.
      stream->reader->set_encoding(
          protocol::parse_encoding(stream->encoding).value_or(Compression::None));
    }
    const std::size_t kept_before = stream->reader->kept_bytes();
    if (auto ok = stream->reader->feed(data, len); !ok) {
      stream->error = ok.error();
    } else if (!stream->streaming() && stream->reader->messages().size() > 1) {
      stream->error =
          Error(StatusCode::InvalidArgument, "a unary call takes exactly one request message");
    }
    if (stream->error) {
      // Answer at once and ignore the rest of the stream: nothing more is buffered for it.
      nghttp2_session_consume_stream(session_, stream_id, len);
      end_with_error(stream_id, *stream->error);
      return 0;
    }
    if (stream->streaming()) take_stream_messages(stream_id, *stream);
    account_window(stream_id, *stream, len, stream->reader->kept_bytes() - kept_before);
    return 0;
  }

  static int on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
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
      // A message still waiting for memory is dispatched once admitted and read.
      if (!stream->waiting) self->dispatch(frame->hd.stream_id);
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
  std::optional<Error> refusal(const ServerStream& stream) const {
    // First: a caller without the token learns nothing else (not even which methods exist),
    // and none of its message is read.
    if (stream.path.rfind(kHealthServicePrefix, 0) == 0) return health_refusal(stream);
    if (auto refused = context_->authenticator.refusal(stream.authorization)) return refused;
    if (stream.path.rfind(protocol::kServicePrefix, 0) != 0) {
      return Error(StatusCode::Unimplemented, "unknown service in path '" + stream.path + "'");
    }
    const std::string& method = stream.method;
    if (method != "ModelInfer" && method != kStreamMethod &&
        !serves_control(method, context_->options.shared_memory)) {
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
  std::optional<Error> health_refusal(const ServerStream& stream) const {
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
  static int on_frame_send(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
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

  static int on_stream_close(nghttp2_session*, std::int32_t stream_id, std::uint32_t,
                             void* user_data) {
    static_cast<GrpcConnection*>(user_data)->streams_.erase(stream_id);
    return 0;
  }

  // ---- Calls -------------------------------------------------------------------------------

  void dispatch(std::int32_t id) {
    ServerStream* stream = find(id);
    if (!stream) return;
    if (stream->error) return respond_error(id, *stream->error);
    if (stream->content_type.rfind("application/grpc", 0) != 0) {
      return respond_error(
          id, Error(StatusCode::InvalidArgument,
                    "content-type must be application/grpc, got '" + stream->content_type + "'"));
    }
    if (!stream->reader) stream->reader.emplace(0, context_->options.max_message_bytes);
    if (stream->streaming()) {
      if (!stream->reader->at_boundary()) {
        return end_with_error(
            id, Error(StatusCode::InvalidArgument, "the stream ended inside a request message"));
      }
      return end_stream_if_done(id);
    }
    auto& messages = stream->reader->messages();
    if (messages.size() != 1 || !stream->reader->at_boundary()) {
      return respond_error(
          id, Error(StatusCode::InvalidArgument, "a unary call needs exactly one request message"));
    }
    ReceivedMessage message = std::move(messages.front());
    messages.clear();
    if (stream->method == "ModelInfer") return infer(id, std::move(message));
    if (stream->path == kHealthCheckPath) return health_check(id, message.envelope);
    control(id, stream->method, message.envelope);
  }

  // Who this connection's client is, for the shared memory extension: asked of the kernel once.
  const ShmClient& shm_client() {
    if (!shm_client_) {
      shm_client_.emplace();
      shm_client_->connection = slot_.id();
      if (context_->options.shared_memory_access == SharedMemoryAccess::Owner) {
        shm_client_->user = net::local_peer_user(link_.socket());
      }
    }
    return *shm_client_;
  }

  void infer(std::int32_t id, ReceivedMessage message) {
    auto request = read_infer_request(std::move(message));
    if (!request) return respond_error(id, request.error());
    // Inputs in shared memory become views of their regions; outputs bound for regions are
    // written there once the model ran.
    ShmUse shm;
    if (SharedMemoryRegistry::uses_shared_memory(*request)) {
      auto bound = context_->shared_memory.bind(shm_client(), *request);
      if (!bound) return respond_error(id, bound.error());
      shm = std::move(*bound);
    }
    const Compression encoding =
        response_encoding(context_->options.infer_response_compression, find(id)->accept_encoding);
    if (context_->options.inline_models) {
      return answer(id, encode_answer(context_->executor->infer(*request), shm, *context_, budget_,
                                      encoding));
    }
    if (auto quick =
            context_->executor->infer_if_quick(*request, context_->options.quick_model_budget)) {
      return answer(id, encode_answer(std::move(*quick), shm, *context_, budget_, encoding));
    }
    std::weak_ptr<GrpcConnection> weak =
        std::static_pointer_cast<GrpcConnection>(shared_from_this());
    // A batching model's requests all go to its batcher at once: holding them back per
    // connection would only shrink its batches (the memory budget still bounds them).
    const bool held = !context_->executor->batches(request->model_name(), request->model_version());
    auto start = [weak, io = io_, id, context = context_, budget = budget_, encoding, held,
                  request = std::move(*request), shm = std::move(shm)]() mutable {
      context->executor->infer_async(
          std::move(request), [weak, io, id, context, budget, encoding, held,
                               shm = std::move(shm)](Result<InferResult> result) mutable {
            // On an executor thread: encode (and compress) here, answer on the connection's
            // thread.
            auto answer = encode_answer(std::move(result), shm, *context, budget, encoding);
            asio::post(*io, [weak, id, held, answer = std::move(answer)]() mutable {
              if (auto self = weak.lock()) {
                if (held) self->models_.finished();
                self->answer(id, std::move(answer));
              }
            });
          });
    };
    if (held) return models_.submit(std::move(start));
    start();
  }

  // ---- ModelStreamInfer -------------------------------------------------------------------
  // As Triton answers a stream (src/grpc/stream_infer_handler.cc): every request is answered on
  // it with ModelStreamInferResponses; a model that is not decoupled answers in the order of
  // the requests, a decoupled one as its responses come, each marked triton_final_response; a
  // request that fails is answered with error_message, naming its id, and the stream goes on;
  // once the client has ended its side and every request is answered, the stream ends with
  // grpc-status 0. Nothing here flushes: stream objects stay valid (the callers flush).

  static constexpr std::uint64_t kNoSlot = ~std::uint64_t{0};  // a decoupled model's request

  bool decoupled(const InferRequest& request) const {
    auto model = context_->executor->model(request.model_name(), request.model_version());
    return model && (*model)->is_decoupled();
  }

  void take_stream_messages(std::int32_t id, ServerStream& stream) {
    auto& messages = stream.reader->messages();
    for (auto& message : messages) stream.backlog.push_back(std::move(message));
    messages.clear();
    start_stream_requests(id, stream);
  }

  // Starts the stream's waiting requests while fewer than kMaxStreamRequests are out. Once none
  // wait, the window held back for them goes to its client.
  void start_stream_requests(std::int32_t id, ServerStream& stream) {
    if (stream.starting) return;  // a request answered inside the loop below: it goes on
    stream.starting = true;
    while (!stream.backlog.empty() && stream.in_flight < kMaxStreamRequests && !stream.answered) {
      ReceivedMessage message = std::move(stream.backlog.front());
      stream.backlog.pop_front();
      ++stream.in_flight;
      stream_infer(id, stream, std::move(message));
    }
    stream.starting = false;
    if (stream.backlog.empty() && stream.unconsumed > 0 && !stream.answered) {
      nghttp2_session_consume_stream(session_, id, stream.unconsumed);
      stream.unconsumed = 0;
    }
  }

  // One request of a stream; it is out (in_flight) until stream_request_done().
  void stream_infer(std::int32_t id, ServerStream& stream, ReceivedMessage message) {
    auto request = read_infer_request(std::move(message));
    const bool decoupled_model = request && decoupled(*request);
    const std::uint64_t slot = decoupled_model ? kNoSlot : stream.next_slot++;
    if (!request) {
      return stream_answered(id, slot,
                             protocol::encode_stream_error(request.error(), InferRequest("")));
    }
    ShmUse shm;
    if (SharedMemoryRegistry::uses_shared_memory(*request)) {
      auto bound = context_->shared_memory.bind(shm_client(), *request);
      if (!bound) {
        return stream_answered(id, slot, protocol::encode_stream_error(bound.error(), *request));
      }
      shm = std::move(*bound);
    }
    // What names the request in an answer that has no result to name it.
    InferRequest named(request->model_name(), request->model_version());
    named.id(request->request_id());
    const bool empty_final = wants_empty_final(*request);
    if (context_->options.inline_models) {
      if (!decoupled_model) {
        auto result = context_->executor->infer(*request);
        return stream_answered(id, slot, stream_answer(std::move(result), shm, named, *context_));
      }
      auto outcome = context_->executor->infer_responses(*request, [&](InferResult result) {
        stream_response(id, stream, stream_answer(std::move(result), shm, named, *context_, false));
      });
      return stream_answered(id, slot, last_answer(outcome, named, empty_final));
    }
    if (!decoupled_model) {
      if (auto quick =
              context_->executor->infer_if_quick(*request, context_->options.quick_model_budget)) {
        return stream_answered(id, slot, stream_answer(std::move(*quick), shm, named, *context_));
      }
    }
    std::weak_ptr<GrpcConnection> weak =
        std::static_pointer_cast<GrpcConnection>(shared_from_this());
    models_.submit([weak, io = io_, id, slot, context = context_, request = std::move(*request),
                    shm = std::move(shm), named = std::move(named), empty_final,
                    decoupled_model]() mutable {
      // On an executor thread: encode there, answer on the connection's thread.
      auto answer = [weak, io, id, slot](std::shared_ptr<OutgoingBody> body) {
        asio::post(*io, [weak, id, slot, body = std::move(body)]() mutable {
          if (auto self = weak.lock()) {
            self->models_.finished();
            self->stream_answered(id, slot, std::move(body));
            self->flush();
          }
        });
      };
      if (!decoupled_model) {
        context->executor->infer_async(
            std::move(request), [answer, context, shm = std::move(shm),
                                 named = std::move(named)](Result<InferResult> result) mutable {
              answer(stream_answer(std::move(result), shm, named, *context));
            });
        return;
      }
      auto shared_shm = std::make_shared<const ShmUse>(std::move(shm));
      auto shared_named = std::make_shared<const InferRequest>(std::move(named));
      context->executor->infer_responses_async(
          std::move(request),
          [weak, io, id, context, shared_shm, shared_named](InferResult result) {
            auto body =
                stream_answer(std::move(result), *shared_shm, *shared_named, *context, false);
            asio::post(*io, [weak, id, body = std::move(body)]() mutable {
              auto self = weak.lock();
              ServerStream* open = self ? self->find(id) : nullptr;
              if (!open) return;
              self->stream_response(id, *open, std::move(body));
              self->flush();
            });
          },
          [answer, shared_named, empty_final](Result<void> outcome) {
            answer(last_answer(outcome, *shared_named, empty_final));
          });
    });
  }

  // Whether a decoupled model's request asked for an empty last response (Triton's
  // triton_enable_empty_final_response).
  static bool wants_empty_final(const InferRequest& request) {
    auto it = request.parameters().find(protocol::kEnableEmptyFinalResponse);
    return it != request.parameters().end() && std::holds_alternative<bool>(it->second) &&
           std::get<bool>(it->second);
  }

  // A result as a stream's answer: outputs bound for shared memory written there, the rest
  // encoded; `final` is its triton_final_response. An error is answered in error_message.
  static std::shared_ptr<OutgoingBody> stream_answer(Result<InferResult> result, const ShmUse& shm,
                                                     const InferRequest& named,
                                                     ServerContext& context, bool final = true) {
    if (result && !shm.empty()) {
      if (auto placed = context.shared_memory.complete(shm, *result); !placed) {
        result = placed.error();
      }
    }
    if (result) {
      result->set_parameter(protocol::kFinalResponse, final);
      auto body =
          protocol::encode_stream_infer_response(*result, context.options.max_message_bytes);
      if (body) return std::move(*body);
      result = body.error();
    }
    return protocol::encode_stream_error(result.error(), named, {{protocol::kFinalResponse, true}});
  }

  // What ends a decoupled model's request: its error, the empty last response it asked for, or
  // nothing.
  static std::shared_ptr<OutgoingBody> last_answer(const Result<void>& outcome,
                                                   const InferRequest& named, bool empty_final) {
    if (!outcome) {
      return protocol::encode_stream_error(outcome.error(), named,
                                           {{protocol::kFinalResponse, true}});
    }
    return empty_final ? protocol::encode_stream_final(named) : nullptr;
  }

  // A request's last answer (null: none): in its turn when the model is not decoupled (`slot`),
  // at once when it is. The request is then done.
  void stream_answered(std::int32_t id, std::uint64_t slot, std::shared_ptr<OutgoingBody> body) {
    ServerStream* stream = find(id);
    if (!stream) return;
    if (slot == kNoSlot) {
      if (body) stream_response(id, *stream, std::move(body));
      return stream_request_done(id, *stream, 1);
    }
    stream->early.emplace(slot, std::move(body));
    std::size_t done = 0;
    for (auto it = stream->early.begin();
         it != stream->early.end() && it->first == stream->next_to_send;
         it = stream->early.erase(it), ++stream->next_to_send, ++done) {
      stream_response(id, *stream, std::move(it->second));
    }
    if (done > 0) stream_request_done(id, *stream, done);
  }

  void stream_request_done(std::int32_t id, ServerStream& stream, std::size_t requests) {
    stream.in_flight -= requests;
    start_stream_requests(id, stream);
    end_stream_if_done(id);
  }

  // Appends an answer to the stream's response, which begins with the first one. An answer
  // held in memory counts in the connection's budget until it was handed to the socket; a
  // client that lets answers pile up past the budget loses its stream. Its trailers would wait
  // behind the answers it does not take, so the stream is reset at once with ENHANCE_YOUR_CALM
  // (which gRPC maps to RESOURCE_EXHAUSTED): the client learns it, stops sending, and the
  // answers are freed when the stream closes.
  void stream_response(std::int32_t id, ServerStream& stream,
                       std::shared_ptr<OutgoingBody> message) {
    if (stream.answered || lost_) return;
    if (!stream.response) open_stream_response(id, stream);
    if (stream.response->drained()) stream.response_bytes.release();
    if (budget_->held() + message->size() > budget_->limit()) {
      stream.answered = true;
      stream.backlog.clear();
      nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_ENHANCE_YOUR_CALM);
      return;
    }
    stream.response_bytes.grow(message->size());
    stream.response->append_message(*message);
    resume(id, *stream.response);
  }

  void open_stream_response(std::int32_t id, ServerStream& stream) {
    stream.response = std::make_shared<OutgoingBody>();
    stream.response->open = true;
    stream.response_bytes = BudgetHold(budget_, 0);
    nghttp2_nv headers[] = {net::make_header(":status", "200"),
                            net::make_header("content-type", "application/grpc"),
                            net::make_header("grpc-accept-encoding", protocol::kAcceptEncoding)};
    nghttp2_data_provider provider = body_provider(stream.response.get());
    nghttp2_submit_response(session_, id, headers, 3, &provider);
  }

  // Ends a stream whose client ended its side, once every request is answered: grpc-status 0
  // in the trailers after the last answer.
  void end_stream_if_done(std::int32_t id) {
    ServerStream* stream = find(id);
    if (!stream || !stream->streaming() || stream->answered || !stream->request_ended ||
        stream->in_flight > 0 || !stream->backlog.empty()) {
      return;
    }
    if (!stream->response) open_stream_response(id, *stream);
    stream->answered = true;
    stream->response->open = false;
    resume(id, *stream->response);
  }

  // Ends a call with an error: a unary call, or a stream that has not answered yet, with a
  // trailers-only response; a stream that has, in the trailers after what it sent.
  void end_with_error(std::int32_t id, const Error& error) {
    ServerStream* stream = find(id);
    if (!stream || !stream->streaming() || !stream->response) return respond_error(id, error);
    if (stream->answered) return;
    stream->answered = true;
    stream->final_error = error;
    stream->backlog.clear();
    stream->response->open = false;
    resume(id, *stream->response);
    stream->reset_after_answer = !stream->request_ended;
  }

  // Writes outputs bound for shared memory into their regions and encodes the rest.
  static Answer encode_answer(Result<InferResult> result, const ShmUse& shm, ServerContext& context,
                              const std::shared_ptr<ConnectionBudget>& budget,
                              Compression encoding = Compression::None) {
    if (!result) return {result.error(), {}};
    if (!shm.empty()) {
      if (auto placed = context.shared_memory.complete(shm, *result); !placed) {
        return {placed.error(), {}};
      }
    }
    auto body = protocol::encode_infer_response(*result, context.options.max_message_bytes);
    if (!body) return {body.error(), {}};
    if (auto packed = protocol::compress_message(**body, encoding, protocol::kDefaultLevel)) {
      body = std::move(packed);
    } else {
      encoding = Compression::None;  // a message that would not shrink goes as it is
    }
    BudgetHold held(budget, (*body)->size());
    return {std::move(body), std::move(held), encoding};
  }

  void answer(std::int32_t id, Answer answer) {
    if (!answer.body) return respond_error(id, answer.body.error());
    respond(id, std::move(*answer.body), std::move(answer.held), answer.encoding);
  }

  void control(std::int32_t id, const std::string& method, const std::string& bytes) {
    ControlContext context{*context_->executor, context_->options,
                           context_->options.shared_memory ? &context_->shared_memory : nullptr,
                           [this]() -> const ShmClient& { return shm_client(); }};
    reply(id, answer_control(context, method, bytes));
  }

  void health_check(std::int32_t id, const std::string& bytes) {
    reply(id, answer_health_check(*context_->executor, context_->options.strict_readiness, bytes));
  }

  // A unary call's answer: its serialized response message, or its error.
  void reply(std::int32_t id, Result<std::string> message) {
    if (!message) return respond_error(id, message.error());
    auto body = std::make_shared<OutgoingBody>();
    body->append_owned(*message);
    if (auto ok = body->finish(context_->options.max_message_bytes); !ok) {
      return respond_error(id, ok.error());
    }
    respond(id, std::move(body), {});
  }

  void respond(std::int32_t id, std::shared_ptr<OutgoingBody> body, BudgetHold held,
               Compression encoding = Compression::None) {
    ServerStream* stream = find(id);
    if (!stream || stream->answered || lost_) return;
    if (stream->timeout && Clock::now() - stream->started > *stream->timeout) {
      return respond_error(id, Error(StatusCode::DeadlineExceeded,
                                     "the request's grpc-timeout passed on the server"));
    }
    stream->answered = true;
    stream->response = std::move(body);
    stream->response_bytes = std::move(held);
    nghttp2_nv headers[] = {net::make_header(":status", "200"),
                            net::make_header("content-type", "application/grpc"),
                            net::make_header("grpc-accept-encoding", protocol::kAcceptEncoding),
                            net::make_header("grpc-encoding", protocol::encoding_name(encoding))};
    nghttp2_data_provider provider = body_provider(stream->response.get());
    // grpc-encoding only with a compressed body.
    nghttp2_submit_response(session_, id, headers, encoding == Compression::None ? 3 : 4,
                            &provider);
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
    nghttp2_nv headers[] = {net::make_header(":status", "200"),
                            net::make_header("content-type", "application/grpc"),
                            net::make_header("grpc-accept-encoding", protocol::kAcceptEncoding),
                            net::make_header("grpc-status", code),
                            net::make_header("grpc-message", message),
                            net::make_header(protocol::kStatusDetailsHeader, details)};
    nghttp2_submit_response(session_, id, headers, details.empty() ? 5 : 6, nullptr);
    // Answered before the client finished sending: once the answer is out, tell it to stop
    // (on_frame_send).
    stream->reset_after_answer = !stream->request_ended;
    flush();
  }

  IoContext io_;
  std::shared_ptr<ServerContext> context_;
  std::shared_ptr<net::ConnectionSet<GrpcConnection>> set_;
  ConnectionSlot slot_;
  const ServerLimits& limits_;
  std::shared_ptr<ConnectionBudget> budget_;
  ModelQueue models_;  // this connection's requests for the executor
  std::map<std::int32_t, std::unique_ptr<ServerStream>> streams_;
  std::deque<std::int32_t> waiting_;  // streams whose message waits for memory, oldest first
  int oversized_header_lists_ = 0;
  ConnectionActivity activity_;
  std::optional<ShmClient> shm_client_;
  asio::steady_timer close_timer_;
  asio::steady_timer watch_timer_;
  asio::steady_timer admission_timer_;
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
                    ConnectionSlot slot(context_);
                    if (!slot) return;  // as many connections as allowed: this one closes now
                    auto connection = std::make_shared<GrpcConnection>(
                        std::move(socket), io, context_, connections_, std::move(slot));
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

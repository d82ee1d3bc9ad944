// Over 500 lines: one connection's calls; their start, flow control and end share its state.
#include "client_connection.hpp"

#include <algorithm>
#include <cstring>

#include "net/tls.hpp"
#include "protocol/grpc_wire.hpp"
#include "protocol/names.hpp"
#include "protocol/pushback.hpp"
#include "sonic/version.hpp"

namespace sonic::grpc {

using protocol::ReceivedMessage;

namespace {

std::string_view view(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

const std::string kUserAgent = std::string("sonic/") + kVersion;

}  // namespace

ClientConnection::ClientConnection(asio::io_context& io, Endpoint endpoint,
                                   ConnectionSettings settings,
                                   net::ChannelEvents<ClientCall> events)
    : H2Session(asio::ip::tcp::socket(io), net::ReadBuffer::kOwn, settings.tls),
      io_(io),
      endpoint_(std::move(endpoint)),
      settings_(settings),
      events_(std::move(events)),
      connector_(io),
      keepalive_(io, settings.keepalive_interval, settings.keepalive_timeout) {
  bool ipv6 = endpoint_.host.find(':') != std::string::npos;
  authority_ =
      (ipv6 ? "[" + endpoint_.host + "]" : endpoint_.host) + ":" + std::to_string(endpoint_.port);
  link_.expect_server(endpoint_.host);
}

ClientConnection::~ClientConnection() = default;

std::string ClientConnection::describe() const { return endpoint_.scheme + "://" + authority_; }

void ClientConnection::connect() {
  state_ = State::Connecting;
  auto self = std::static_pointer_cast<ClientConnection>(shared_from_this());
  connector_.start(link_.socket(), endpoint_.host, endpoint_.port, settings_.connect_timeout, self,
                   [this, self](std::string failure) {
                     if (state_ != State::Connecting) return;
                     if (!failure.empty()) return connect_failed(failure);
                     link_.handshake(settings_.connect_timeout, self, [this](std::string why) {
                       if (state_ != State::Connecting) return;
                       if (!why.empty()) return connect_failed(why);
                       on_connected();
                     });
                   });
}

void ClientConnection::connect_failed(const std::string& why) {
  // First the backoff, then the calls: a caller that sends again on hearing of the failure must
  // find the backoff in place.
  if (events_.connected) events_.connected(why);
  state_ = State::Closed;
  lost_ = true;
  connector_.cancel();
  close_socket();
  auto waiting = std::move(waiting_);
  waiting_.clear();
  for (auto& call : waiting) {
    complete(call, Error(StatusCode::Unavailable, "cannot connect to " + describe() + ": " + why)
                       .set_never_sent());
  }
}

void ClientConnection::on_connected() {
  std::error_code ignored;
  link_.socket().set_option(asio::ip::tcp::no_delay(true), ignored);

  nghttp2_session_callbacks* callbacks = nullptr;
  nghttp2_session_callbacks_new(&callbacks);
  install_common_callbacks(callbacks);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, &ClientConnection::on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, &ClientConnection::on_frame_recv);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks,
                                                         &ClientConnection::on_stream_close);
  nghttp2_session_callbacks_set_on_frame_not_send_callback(callbacks,
                                                           &ClientConnection::on_frame_not_send);
  nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, &ClientConnection::on_frame_send);
  nghttp2_option* option = nullptr;
  nghttp2_option_new(&option);
  // Until the server's SETTINGS arrive, assume gRPC's customary limit rather than "unlimited".
  nghttp2_option_set_peer_max_concurrent_streams(option, 100);
  // Received bytes go back to the windows as they are consumed (on_data): a stream's
  // only while its caller keeps up (StreamWindow).
  nghttp2_option_set_no_auto_window_update(option, 1);
  int rv = nghttp2_session_client_new2(&session_, callbacks, this, option);
  nghttp2_option_del(option);
  nghttp2_session_callbacks_del(callbacks);
  if (rv != 0)
    return connect_failed(std::string("cannot create HTTP/2 session: ") + nghttp2_strerror(rv));

  net::H2Settings settings;
  settings.stream_window_bytes = settings_.stream_window_bytes;
  settings.connection_window_bytes = settings_.connection_window_bytes;
  settings.max_concurrent_streams = 0;  // the server may not push
  if (int err = submit_settings(settings, false); err != 0) {
    return connect_failed(std::string("cannot send SETTINGS: ") + nghttp2_strerror(err));
  }
  state_ = State::Ready;
  if (events_.connected) events_.connected(std::string());
  start_reading();
  start_waiting();
  flush();
  keepalive_.start(weak_from_this(), {[this] { return !streams_.empty() || !parked_.empty(); },
                                      [this] {
                                        nghttp2_submit_ping(session_, NGHTTP2_FLAG_NONE, nullptr);
                                        flush();
                                      },
                                      [this](const std::string& why) {
                                        shutdown(StatusCode::Unavailable,
                                                 "connection to " + describe() + ": " + why);
                                      }});
  if (!streams_.empty()) keepalive_.activity();
}

void ClientConnection::submit(std::shared_ptr<ClientCall> call) {
  auto self = std::static_pointer_cast<ClientConnection>(shared_from_this());
  call->connection = self;
  net::arm_deadline(call, io_, self);
  if (call->finished()) return;
  switch (state_) {
    case State::Idle:
    case State::Connecting: waiting_.push_back(std::move(call)); return;
    case State::Ready:
      waiting_.push_back(std::move(call));  // behind those already waiting
      start_waiting();
      flush();
      keepalive_.activity();
      return;
    case State::Closed:
      complete(call, Error(StatusCode::Unavailable, "connection to " + describe() + " is closed")
                         .set_never_sent());
      return;
  }
}

void ClientConnection::let_go(const std::shared_ptr<ClientCall>&, const std::string& why) {
  fail(why);  // closes the socket: the write ends, and its calls are answered
}

void ClientConnection::abandon(const std::shared_ptr<ClientCall>& call, Error why) {
  if (call->finished()) return;
  if (call->stream_id > 0 && !lost_ && streams_.erase(call->stream_id) > 0) {
    // Tell the server to stop working on it; the stream's close event finds it gone.
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, call->stream_id, NGHTTP2_CANCEL);
    start_waiting();
    flush();
  }
  complete(call, std::move(why));
  if (call->stream_id <= 0) forget_finished_waiting();
}

void ClientConnection::forget_finished_waiting() {
  // Each call that ended while waiting is counted; once they are half the queue, the queue is
  // swept. A server that keeps its streams busy then holds at most about as many ended calls
  // as live ones, and each sweep is paid for by the ends that made it.
  if (++finished_waiting_ * 2 <= waiting_.size()) return;
  waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(),
                                [](const auto& waiting) { return waiting->finished(); }),
                 waiting_.end());
  finished_waiting_ = 0;
}

bool ClientConnection::stream_free() const {
  return streams_.size() <
         nghttp2_session_get_remote_settings(session_, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
}

void ClientConnection::start_waiting() {
  if (state_ != State::Ready) return;
  if (!usable()) {
    // No new stream may start here (GOAWAY, or the connection is lost): calls that never
    // reached the server start again elsewhere, or fail as safe to retry.
    auto waiting = std::move(waiting_);
    waiting_.clear();
    for (auto& call : waiting) {
      if (call->finished() || hand_back(call)) continue;
      complete(call, Error(StatusCode::Unavailable,
                           "the connection to " + describe() +
                               " takes no more calls; this one never reached the server")
                         .set_never_sent());
    }
    return;
  }
  while (!waiting_.empty() && stream_free()) {
    auto call = std::move(waiting_.front());
    waiting_.pop_front();
    if (!call->finished()) start_stream(call);
  }
}

void ClientConnection::resume_call(const std::shared_ptr<ClientCall>& call) {
  if (call->finished() || call->stream_id <= 0 || lost_) return;  // not started: it reads later
  resume(call->stream_id, *call->body);
  flush();
}

void ClientConnection::start_stream(const std::shared_ptr<ClientCall>& call) {
  char path_buffer[128];  // the path without an allocation: every method name is short
  std::string long_path;
  std::string_view path;
  std::size_t method_length = call->method.size();
  if (protocol::kServicePrefix.size() + method_length <= sizeof(path_buffer)) {
    std::memcpy(path_buffer, protocol::kServicePrefix.data(), protocol::kServicePrefix.size());
    std::memcpy(path_buffer + protocol::kServicePrefix.size(), call->method.data(), method_length);
    path = std::string_view(path_buffer, protocol::kServicePrefix.size() + method_length);
  } else {
    long_path = std::string(protocol::kServicePrefix) + call->method;
    path = long_path;
  }
  std::string timeout;
  auto& nva = headers_;
  nva.clear();
  nva.push_back(net::make_header(":method", "POST"));
  nva.push_back(net::make_header(":scheme", "http"));
  nva.push_back(net::make_header(":path", path));
  nva.push_back(net::make_header(":authority", authority_));
  nva.push_back(net::make_header("content-type", "application/grpc"));
  nva.push_back(net::make_header("te", "trailers"));
  nva.push_back(net::make_header("user-agent", kUserAgent));
  // Servers may compress answers in any of these (Triton: --grpc-infer-response-compression-
  // level); a call's own grpc-encoding, when it compresses, is among its headers.
  nva.push_back(net::make_header("grpc-accept-encoding", protocol::kAcceptEncoding));
  if (call->deadline != Deadline::max()) {
    timeout = protocol::format_grpc_timeout(call->deadline - Clock::now());
    nva.push_back(net::make_header("grpc-timeout", timeout));
  }
  auto& encoded = encoded_headers_;  // base64 values of binary headers, alive until submitted
  encoded.clear();
  encoded.reserve(call->headers.size());  // no reallocation: nva points into these strings
  for (const auto& [name, value] : call->headers) {
    bool binary = name.size() > 4 && name.compare(name.size() - 4, 4, "-bin") == 0;
    if (binary) encoded.push_back(protocol::base64_encode(value));
    nva.push_back(net::make_header(
        name, binary ? std::string_view(encoded.back()) : std::string_view(value)));
  }

  nghttp2_data_provider provider = body_provider(call->body.get());
  std::int32_t id =
      nghttp2_submit_request(session_, nullptr, nva.data(), nva.size(), &provider, call.get());
  if (id < 0) {
    StatusCode code =
        id == NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE ? StatusCode::Unavailable : StatusCode::Internal;
    if (id == NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE)
      goaway_ = true;  // the next call opens a new connection
    complete(call, Error(code, std::string("cannot start the call: ") + nghttp2_strerror(id)));
    return;
  }
  call->stream_id = id;
  streams_[id] = call;
  call->times.started = Clock::now();
}

std::shared_ptr<ClientCall> ClientConnection::find(std::int32_t stream_id) const {
  auto it = streams_.find(stream_id);
  return it == streams_.end() ? nullptr : it->second;
}

int ClientConnection::on_header(nghttp2_session*, const nghttp2_frame* frame,
                                const std::uint8_t* name, std::size_t namelen,
                                const std::uint8_t* value, std::size_t valuelen, std::uint8_t,
                                void* user_data) {
  auto* self = static_cast<ClientConnection*>(user_data);
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  auto call = self->find(frame->hd.stream_id);
  if (!call) return 0;
  std::string_view n = view(name, namelen), v = view(value, valuelen);
  if (n == ":status") {
    call->times.first_byte = Clock::now();
    int status = 0;
    for (char c : v) status = status * 10 + (c - '0');
    call->response_state().http_status = status;
  } else if (n == "content-type") {
    // Kept only when it is not gRPC's, for the error message (spares an allocation per call).
    CallResponse& response = call->response_state();
    response.grpc_content_type = v.rfind("application/grpc", 0) == 0;
    if (!response.grpc_content_type) response.content_type = std::string(v);
  } else if (n == "grpc-status") {
    call->response_state().grpc_status = protocol::parse_grpc_status(v);
  } else if (n == "grpc-message") {
    call->response_state().grpc_message = protocol::percent_decode(v);
  } else if (n == protocol::kStatusDetailsHeader) {
    if (auto details = protocol::base64_decode(v)) {
      call->response_state().error_reason = protocol::reason_from_status_details(*details);
    }
  } else if (n == protocol::kRetryPushbackHeader) {
    call->response_state().pushback = protocol::parse_retry_pushback(v);
  } else if (n == "retry-after") {
    call->response_state().retry_after =
        protocol::parse_retry_after(v, std::chrono::system_clock::now());
  } else if (n == "grpc-encoding") {
    // How the answer's messages are compressed; one sonic does not know fails at its first
    // compressed message (INTERNAL), as the reader refuses what it cannot inflate.
    call->response_state().reader.set_encoding(
        protocol::parse_encoding(v).value_or(Compression::None));
  }
  return 0;
}

// Whether an answer's body is gRPC messages: HTTP status 200 and a gRPC content-type (gRPC's
// PROTOCOL-HTTP2.md). Anything else is a proxy's or a web server's answer, whose status alone
// counts (doc/http-grpc-status-mapping.md).
bool ClientConnection::carries_grpc(const CallResponse& response) {
  return response.http_status == 200 && response.grpc_content_type;
}

int ClientConnection::on_data(std::int32_t stream_id, const std::uint8_t* data, std::size_t len) {
  // The connection's window never waits: a stream that does waits in its own.
  nghttp2_session_consume_connection(session_, len);
  auto call = find(stream_id);
  if (!call || call->finished() || !carries_grpc(call->response_state())) {
    // Not for a call, or not gRPC: a proxy's error page (HTTP 502, text/html) is no message.
    // It is dropped; the status says what happened when the stream closes (outcome_of).
    nghttp2_session_consume_stream(session_, stream_id, len);
    return 0;
  }
  auto ok = call->response_state().reader.feed(data, len);
  if (ok && call->stream) {
    auto& messages = call->response->reader.messages();
    for (auto& message : messages) {
      auto hold = call->stream->window->hold(message.byte_size());
      call->stream->on_message(std::move(message), std::move(hold));
    }
    messages.clear();
  } else if (ok && call->response->reader.messages().size() > 1) {
    ok = Error(StatusCode::Internal, "server sent more than one message for a unary call");
  }
  if (!ok) {
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
    streams_.erase(stream_id);
    complete(call, ok.error());
    start_waiting();
    return 0;
  }
  if (call->stream && call->stream->window->hold_back()) {
    call->stream->window_held_back += len;  // the server waits until the caller catches up
  } else {
    nghttp2_session_consume_stream(session_, stream_id, len);
  }
  return 0;
}

protocol::MessageReader::Destination ClientConnection::read_destination(std::int32_t stream_id) {
  auto call = find(stream_id);
  if (!call || call->finished() || !call->response || !carries_grpc(*call->response)) return {};
  return call->response->reader.tensor_destination();
}

const protocol::OutgoingBody* ClientConnection::sending_body(std::int32_t stream_id) {
  auto call = find(stream_id);
  return call ? call->body.get() : nullptr;
}

void ClientConnection::reopen_window(const std::shared_ptr<ClientCall>& call) {
  if (call->finished() || call->stream_id <= 0 || lost_ || !call->stream) return;
  StreamPart& stream = *call->stream;
  if (stream.window_held_back == 0) return;
  if (stream.window->hold_back()) return;  // held again meanwhile: it says when to come back
  nghttp2_session_consume_stream(session_, call->stream_id, stream.window_held_back);
  stream.window_held_back = 0;
  flush();
}

int ClientConnection::on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
  auto* self = static_cast<ClientConnection*>(user_data);
  if (frame->hd.type == NGHTTP2_GOAWAY) {
    self->goaway_ = true;   // streams above last_stream_id are closed with REFUSED_STREAM
    self->start_waiting();  // hands the waiting calls back
  } else if (frame->hd.type == NGHTTP2_SETTINGS && !(frame->hd.flags & NGHTTP2_FLAG_ACK)) {
    self->start_waiting();  // the server's stream limit is known: it may allow more
  } else if (frame->hd.type == NGHTTP2_PING && (frame->hd.flags & NGHTTP2_FLAG_ACK)) {
    self->keepalive_.pong();
  }
  return 0;
}

int ClientConnection::on_frame_not_send(nghttp2_session*, const nghttp2_frame* frame, int lib_error,
                                        void* user_data) {
  // A request nghttp2 held back (over the stream limit) that can no longer start, e.g. after
  // GOAWAY: it never reached the server, so it is safe to retry elsewhere.
  auto* self = static_cast<ClientConnection*>(user_data);
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  auto call = self->find(frame->hd.stream_id);
  if (!call) return 0;
  self->streams_.erase(frame->hd.stream_id);
  if (!self->usable() && self->hand_back(call)) return 0;
  self->complete(
      call, Error(StatusCode::Unavailable,
                  "the call could not start on the connection to " + self->describe() + " (" +
                      nghttp2_strerror(lib_error) + "); it never reached the server, safe to retry")
                .set_never_sent());
  return 0;
}

int ClientConnection::on_frame_send(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
  // The frame that ends the request marks it sent (handed to the socket's write queue).
  if (!(frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) return 0;
  auto call = static_cast<ClientConnection*>(user_data)->find(frame->hd.stream_id);
  if (call) call->times.sent = Clock::now();
  return 0;
}

int ClientConnection::on_stream_close(nghttp2_session*, std::int32_t stream_id,
                                      std::uint32_t error_code, void* user_data) {
  auto* self = static_cast<ClientConnection*>(user_data);
  auto it = self->streams_.find(stream_id);
  if (it != self->streams_.end()) {
    auto call = std::move(it->second);
    self->streams_.erase(it);
    self->close_stream(call, error_code);
  }
  self->start_waiting();  // a slot under the server's stream limit is free
  return 0;
}

void ClientConnection::close_stream(const std::shared_ptr<ClientCall>& call,
                                    std::uint32_t error_code) {
  call->times.last_byte = Clock::now();
  if (call->finished()) return;
  // REFUSED_STREAM means the server did not process the stream: more streams than its limit,
  // sent before its SETTINGS arrived, or a stream above the last one a GOAWAY said it would
  // process. Like gRPC, start it again transparently: here, or on a new connection after GOAWAY.
  const bool answered =
      call->response && (call->response->grpc_status || call->response->http_status != 0);
  if (error_code == NGHTTP2_REFUSED_STREAM && !answered) {
    if (!usable()) {
      if (hand_back(call)) return;
    } else if (call->refusals < ClientCall::kMaxRefusals) {
      ++call->refusals;
      call->reset_for_retry();
      start_stream(call);
      return;
    }
  }
  complete(call, outcome_of(*call, error_code));
}

bool ClientConnection::hand_back(const std::shared_ptr<ClientCall>& call) {
  // A stream's body forgets what it sent: it cannot be sent again elsewhere.
  if (!events_.restart || call->refusals >= ClientCall::kMaxRefusals || call->stream) {
    return false;
  }
  ++call->refusals;
  call->reset_for_retry();
  // Posted: this runs inside nghttp2's callbacks, where starting a connection must not happen.
  asio::post(io_, [restart = events_.restart, call] { restart(call); });
  return true;
}

Result<ReceivedMessage> ClientConnection::outcome_of(ClientCall& call,
                                                     std::uint32_t h2_error) const {
  CallResponse& response = call.response_state();
  if (response.grpc_status) {
    StatusCode code = *response.grpc_status;
    if (code != StatusCode::Ok) {
      Error error(code,
                  response.grpc_message.empty() ? sonic::describe(code) : response.grpc_message,
                  response.error_reason);
      if (response.pushback) error.set_pushback(*response.pushback);
      return error;
    }
    protocol::MessageReader& reader = response.reader;
    if (!reader.at_boundary()) {
      return Error(StatusCode::Internal,
                   "response from " + describe() + " ended inside a message (truncated)");
    }
    if (call.stream) return ReceivedMessage{};  // a stream: its messages went as they came
    if (reader.messages().size() != 1) {
      return Error(StatusCode::Internal, "expected one response message from " + describe() +
                                             ", got " + std::to_string(reader.messages().size()));
    }
    return std::move(reader.messages().front());
  }
  if (h2_error != NGHTTP2_NO_ERROR) return protocol::error_from_reset(h2_error);
  if (response.http_status != 200 && response.http_status != 0) {
    Error error(protocol::status_from_http(response.http_status),
                "HTTP status " + std::to_string(response.http_status) + " from " + describe() +
                    " (not a gRPC response)");
    // A proxy in front of the server that is overloaded or down for a while may say when to
    // come back (RFC 9110 10.2.3: with 503, and RFC 6585 with 429).
    const bool may_push_back = response.http_status == 429 || response.http_status == 503;
    if (may_push_back && response.retry_after) error.set_pushback(*response.retry_after);
    return error;
  }
  if (!response.grpc_content_type) {
    return Error(StatusCode::Unknown, "not a gRPC server at " + describe() + " (content-type '" +
                                          response.content_type + "')");
  }
  return Error(StatusCode::Internal,
               "server " + describe() + " closed the stream without a grpc-status");
}

void ClientConnection::complete(const std::shared_ptr<ClientCall>& call,
                                Result<ReceivedMessage> outcome) {
  if (call->finished()) return;
  if (call->stream) call->stream->window->detach();
  // A write still reads the caller's tensors: answered once it no longer does.
  const bool borrowed = call->body && call->body->in_flight_writes > 0;
  if (net::settle(call, std::move(outcome), borrowed, io_, *this)) {
    parked_[call->body.get()] = call;
  }
}

void ClientConnection::on_body_released(protocol::OutgoingBody& body) {
  auto it = parked_.find(&body);
  if (it == parked_.end()) return;
  auto call = std::move(it->second);
  parked_.erase(it);
  call->release();
}

void ClientConnection::on_connection_lost(const std::string& why) {
  state_ = State::Closed;
  keepalive_.stop();
  connector_.cancel();
  auto streams = std::move(streams_);
  streams_.clear();
  auto waiting = std::move(waiting_);
  waiting_.clear();
  Error error(StatusCode::Unavailable, "connection to " + describe() + " lost: " + why);
  if (!peer_framed()) error = Error(StatusCode::Unavailable, not_a_grpc_server(why));
  for (auto& [id, call] : streams) complete(call, error);
  for (auto& call : waiting) complete(call, error);
}

std::string ClientConnection::not_a_grpc_server(const std::string& why) const {
  const std::string& first = peer_first_bytes();
  const std::string where = describe();
  if (auto refused = net::client_certificate_refusal(why); !refused.empty()) {
    return "connection to " + where + ": " + refused;
  }
  if (first.empty()) {
    // A TLS server closes a connection whose first bytes are not a ClientHello, saying nothing.
    return "connection to " + where + " closed before the server said anything (" + why +
           "): is it a gRPC server" + (link_.secure() ? "" : ", and not a TLS one (grpcs://)") +
           ", and does it accept more connections?";
  }
  const std::string line = first.substr(0, first.find_first_of("\r\n"));
  const bool text =
      std::all_of(line.begin(), line.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
  if (text && !line.empty()) {
    // An HTTP/1 server (a status line, or a bare error page): Triton serves HTTP/REST on 8000
    // and gRPC on 8001, and pointing grpc:// at the first is the classic mistake.
    return where + " answered in HTTP/1 or plain text (\"" + line +
           "\"), not HTTP/2: it is not a gRPC port (Triton serves HTTP on 8000 and gRPC on 8001 "
           "by default)";
  }
  return where + " did not answer in HTTP/2 (" + why +
         "): it is not a gRPC port (sonic-server's tcp:// port, say: use the tcp:// scheme there)";
}

void ClientConnection::shutdown(StatusCode code, const std::string& why) {
  auto streams = std::move(streams_);
  streams_.clear();
  auto waiting = std::move(waiting_);
  waiting_.clear();
  for (auto& [id, call] : streams) complete(call, Error(code, why));
  for (auto& call : waiting) complete(call, Error(code, why));
  state_ = State::Closed;
  fail(why);  // closes the socket: writes under way end, and their calls are answered
}

}  // namespace sonic::grpc

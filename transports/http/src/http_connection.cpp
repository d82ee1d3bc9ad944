#include "http_connection.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <utility>

#include "net/http_head.hpp"
#include "protocol/compression.hpp"
#include "protocol/grpc_wire.hpp"
#include "protocol/pushback.hpp"

namespace sonic::http {

namespace {

// A response head longer than this is not an inference server's: the connection is dropped
// rather than the buffer grown (Triton's heads are a few hundred bytes).
constexpr std::size_t kMaxHeadBytes = 64 << 10;

}  // namespace

HttpConnection::HttpConnection(asio::io_context& io, const Endpoint& endpoint,
                               net::ConnectionSettings settings, Events events)
    : endpoint_(endpoint),
      settings_(std::move(settings)),
      events_(std::move(events)),
      connector_(io),
      link_(asio::ip::tcp::socket(io), settings_.tls) {
  link_.expect_server(endpoint_.host);
}

void HttpConnection::connect() {
  auto self = shared_from_this();
  connector_.start(link_.socket(), endpoint_.host, endpoint_.port, settings_.connect_timeout, self,
                   [this, self](std::string failure) {
                     if (closed_) return;
                     if (!failure.empty()) return lost(failure);
                     link_.handshake(settings_.connect_timeout, self, [this](std::string why) {
                       if (closed_) return;
                       if (!why.empty()) return lost(why);
                       connected_ = true;
                       std::error_code ignored;
                       link_.socket().set_option(asio::ip::tcp::no_delay(true), ignored);
                       keep_alive();
                       events_.connected(std::string());
                       // Reading while idle notices a server that closes a kept-alive
                       // connection (its idle timeout) before a request is sent on it.
                       read();
                     });
                   });
}

void HttpConnection::keep_alive() {
  // HTTP/1.1 has no PING: the kernel's keepalive probes notice a server that vanished without
  // closing the connection, on ClientOptions' keepalive schedule (probes after
  // keepalive_interval of silence, the connection dead keepalive_timeout later), so that a call
  // without a deadline does not wait on it for ever.
  const auto interval =
      std::chrono::duration_cast<std::chrono::seconds>(settings_.keepalive_interval);
  if (interval.count() <= 0) return;
  const auto timeout =
      std::chrono::duration_cast<std::chrono::seconds>(settings_.keepalive_timeout);
  const int idle = static_cast<int>(std::max<std::int64_t>(1, interval.count()));
  const int count = 3;
  const int gap = static_cast<int>(std::max<std::int64_t>(1, timeout.count() / count));
  const int fd = link_.socket().native_handle();
  const int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &gap, sizeof gap);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
}

void HttpConnection::start(std::shared_ptr<HttpCall> call) {
  call_ = std::move(call);
  served_ = true;
  phase_ = Phase::Head;
  answer_ = HttpAnswer{};
  out_.clear();
  out_.push_back(asio::buffer(call_->head));
  if (!call_->request.json.empty()) out_.push_back(asio::buffer(call_->request.json));
  for (const auto& bytes : call_->request.binary) {
    if (bytes.size != 0) out_.push_back(asio::const_buffer(bytes.data, bytes.size));
  }
  writing_ = true;
  link_.async_write(out_, [self = shared_from_this()](std::error_code error, std::size_t) {
    self->writing_ = false;
    if (self->call_ && self->call_->parked()) {  // it ended while its bytes were being written
      return self->deliver(self->call_->take_parked());
    }
    if (error && !self->closed_) self->lost(error.message());
  });
}

void HttpConnection::read() {
  if (reading_ || closed_) return;
  reading_ = true;
  asio::mutable_buffer into = asio::buffer(chunk_);
  if (phase_ == Phase::Binary) {
    // Straight into the output's buffer: its bytes are copied by no one.
    into = asio::buffer(answer_.parts[part_].get() + part_filled_,
                        answer_.part_sizes[part_] - part_filled_);
  }
  link_.async_read_some(into, [self = shared_from_this()](std::error_code error, std::size_t n) {
    self->reading_ = false;
    if (self->closed_) return;
    if (error) {
      return self->lost(error == asio::error::eof ? "the server closed the connection"
                                                  : error.message());
    }
    self->on_read(n);
  });
}

void HttpConnection::on_read(std::size_t n) {
  if (!call_ || answered_) return lost("the server sent bytes no request asked for");
  if (phase_ == Phase::Binary) {
    part_filled_ += n;
    body_left_ -= n;
    next_part();
    if (body_left_ == 0) finish(std::move(answer_));
  } else if (phase_ == Phase::Head) {
    buffer_.append(chunk_.data(), n);
    // A head, or an interim head (100 Continue) and the real one after it.
    while (call_ && !answered_ && phase_ == Phase::Head) {
      const std::size_t end = buffer_.find("\r\n\r\n");
      if (end == std::string::npos) {
        if (buffer_.size() > kMaxHeadBytes) return lost("an answer's head is over 64 KiB");
        break;
      }
      std::string rest = buffer_.substr(end + 4);
      buffer_.resize(end + 4);
      on_head();
      if (closed_) return;
      if (phase_ == Phase::Head && call_) {
        buffer_ = std::move(rest);
        continue;
      }
      body_bytes(rest.data(), rest.size());
    }
  } else {
    body_bytes(chunk_.data(), n);
  }
  // Reading on while idle too (see connect()).
  if (!closed_) read();
}

void HttpConnection::on_head() {
  std::string_view head(buffer_);
  const std::size_t line_end = head.find("\r\n");
  const std::string_view status_line = head.substr(0, line_end);
  // HTTP-version SP status-code SP [reason-phrase]
  if (status_line.size() < 12 || status_line.substr(0, 7) != "HTTP/1." || status_line[8] != ' ') {
    return lost("the server's answer is not HTTP/1.x");
  }
  int status = 0;
  for (char c : status_line.substr(9, 3)) {
    if (c < '0' || c > '9') return lost("the server's answer has a malformed status");
    status = status * 10 + (c - '0');
  }
  net::HttpFields fields;
  if (auto refused = net::parse_http_fields(head.substr(line_end + 2), fields); !refused.empty()) {
    return lost("the server's answer has a " + refused);
  }
  buffer_.clear();
  if (status == 100) return;  // an interim answer: the real one follows
  answer_.status = status;
  answer_.retry_after.reset();
  if (status == 429 || status == 503) {
    if (const std::string& after = fields["retry-after"]; !after.empty()) {
      answer_.retry_after = protocol::parse_retry_after(after, std::chrono::system_clock::now());
    }
  }
  close_after_ = status_line[7] == '0' ||
                 net::ascii_lower(fields["connection"]).find("close") != std::string::npos;
  if (!fields["transfer-encoding"].empty()) {
    return lost("the server sent a chunked answer; sonic reads answers with a Content-Length");
  }
  // 204 and 304 answers have no body (RFC 9110); every other one says its length.
  auto length = status == 204 || status == 304 ? std::optional<std::size_t>(0)
                                               : net::parse_http_length(fields["content-length"]);
  if (!length) return lost("the server's answer has no valid Content-Length");
  if (*length > settings_.max_message_bytes) {
    // Not read: the connection is closed instead, so nothing of it is held.
    close_after_ = true;
    return finish(Error(StatusCode::ResourceExhausted,
                        "an answer of " + std::to_string(*length) +
                            " bytes exceeds max_message_bytes (" +
                            std::to_string(settings_.max_message_bytes) + ")"));
  }
  body_left_ = *length;
  phase_ = Phase::Body;
  encoding_ = Compression::None;
  inflated_json_length_.reset();
  if (const std::string& encoding = fields["content-encoding"]; !encoding.empty()) {
    auto known = protocol::parse_encoding(encoding);
    if (!known) return lost("the server's answer has Content-Encoding '" + encoding + "'");
    encoding_ = *known;
  }
  const std::string& json_length = fields["inference-header-content-length"];
  if (status == 200 && call_->binary_answer && !json_length.empty()) {
    auto n = net::parse_http_length(json_length);
    if (!n) return lost("the server's Inference-Header-Content-Length is malformed");
    if (encoding_ != Compression::None) {
      inflated_json_length_ = *n;  // of the inflated body: read whole, then split
    } else if (*n > body_left_) {
      return lost("the server's Inference-Header-Content-Length is past its Content-Length");
    } else {
      json_left_ = *n;
      phase_ = Phase::Json;
    }
  }
  if (body_left_ == 0) body_read();
}

void HttpConnection::body_read() {
  if (encoding_ == Compression::None) return finish(std::move(answer_));
  finish(inflated());
}

Result<HttpAnswer> HttpConnection::inflated() {
  // Within max_message_bytes, inflated or not; the buffer grows only as the stream inflates.
  auto body = protocol::inflate_bytes(answer_.body, encoding_, settings_.max_message_bytes);
  if (!body) return body.error();
  HttpAnswer answer;
  answer.status = answer_.status;
  answer.retry_after = answer_.retry_after;
  answer.body = std::move(*body);
  if (!inflated_json_length_) return answer;
  // Binary tensor data follows the JSON: copied out into aligned buffers, as it was never in
  // place to be read into them.
  const std::size_t json_length = *inflated_json_length_;
  if (json_length > answer.body.size()) {
    return Error(StatusCode::Internal,
                 "the server's Inference-Header-Content-Length is past its inflated body");
  }
  auto parsed = parse_rest_answer(std::string_view(answer.body).substr(0, json_length));
  if (!parsed) return parsed.error();
  auto sizes = binary_layout(*parsed, answer.body.size() - json_length);
  if (!sizes) return sizes.error();
  std::size_t at = json_length;
  for (std::size_t size : *sizes) {
    answer.parts.push_back(protocol::allocate_tensor_buffer(std::max<std::size_t>(size, 1)));
    std::copy_n(answer.body.data() + at, size, answer.parts.back().get());
    at += size;
  }
  answer.body.resize(json_length);
  answer.parsed = std::move(*parsed);
  answer.part_sizes = std::move(*sizes);
  return answer;
}

void HttpConnection::body_bytes(const char* data, std::size_t n) {
  while (n != 0 && call_ && !answered_ && !closed_) {
    if (phase_ == Phase::Body || phase_ == Phase::Json) {
      const std::size_t limit = phase_ == Phase::Json ? json_left_ : body_left_;
      const std::size_t take = std::min(n, limit);
      answer_.body.append(data, take);
      data += take;
      n -= take;
      body_left_ -= take;
      if (phase_ == Phase::Json) {
        json_left_ -= take;
        if (json_left_ == 0) start_binary();
      } else if (body_left_ == 0) {
        body_read();
      }
      continue;
    }
    // Binary bytes that came with the JSON: copied once into their buffers.
    const std::size_t take = std::min(n, answer_.part_sizes[part_] - part_filled_);
    std::copy_n(data, take, answer_.parts[part_].get() + part_filled_);
    data += take;
    n -= take;
    part_filled_ += take;
    body_left_ -= take;
    next_part();
    if (body_left_ == 0) finish(std::move(answer_));
  }
  if (n != 0 && !closed_) lost("the server sent bytes past its answer");
}

void HttpConnection::start_binary() {
  auto parsed = parse_rest_answer(answer_.body);
  auto sizes = parsed ? binary_layout(*parsed, body_left_) : parsed.error();
  if (!sizes) {
    close_after_ = true;  // the rest of the body is not worth reading
    return finish(sizes.error());
  }
  answer_.parsed = std::move(*parsed);
  answer_.part_sizes = std::move(*sizes);
  answer_.parts.clear();
  for (std::size_t size : answer_.part_sizes) {
    answer_.parts.push_back(protocol::allocate_tensor_buffer(std::max<std::size_t>(size, 1)));
  }
  part_ = 0;
  part_filled_ = 0;
  next_part();
  phase_ = Phase::Binary;
  if (body_left_ == 0) finish(std::move(answer_));
}

void HttpConnection::next_part() {
  // Past the parts that are full; empty ones take no reads.
  while (part_ < answer_.part_sizes.size() && part_filled_ == answer_.part_sizes[part_]) {
    ++part_;
    part_filled_ = 0;
  }
}

void HttpConnection::finish(Result<HttpAnswer> outcome) {
  if (!call_ || answered_) return;
  answered_ = true;
  if (writing_) {
    // The request's bytes are still being written (the server answered early, or the call
    // was abandoned): reported once the write no longer reads them.
    return call_->park(std::move(outcome));
  }
  deliver(std::move(outcome));
}

void HttpConnection::deliver(Result<HttpAnswer> outcome) {
  auto call = std::move(call_);
  call_.reset();
  answered_ = false;
  phase_ = Phase::Head;
  const bool reusable = static_cast<bool>(outcome) && !close_after_;
  close_after_ = false;
  if (!reusable && !closed_) {
    closed_ = true;
    connector_.cancel();
    link_.close();
  }
  events_.finished(std::move(call), std::move(outcome));
}

void HttpConnection::abandon(Error why) {
  if (!call_) return;
  closed_ = true;
  connector_.cancel();
  link_.close();  // a pending write ends with operation_aborted, then finish() reports
  finish(std::move(why));
}

void HttpConnection::close(const Error& why) {
  const bool was_closed = closed_;
  closed_ = true;
  connector_.cancel();
  if (!was_closed) link_.close();
  if (call_) finish(why);
}

void HttpConnection::lost(const std::string& why) {
  if (closed_) return;
  const bool was_connected = connected_;
  closed_ = true;
  connector_.cancel();
  link_.close();
  std::string error =
      (was_connected ? "connection to " : "cannot connect to ") + endpoint_.url + ": " + why;
  if (auto refused = net::client_certificate_refusal(why); !refused.empty()) {
    error = "connection to " + endpoint_.url + ": " + refused;
  }
  if (!was_connected) events_.connected(why);
  if (call_) return finish(Error(StatusCode::Unavailable, error));
  events_.finished(nullptr, Error(StatusCode::Unavailable, error));
}

}  // namespace sonic::http

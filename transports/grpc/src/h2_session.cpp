#include "h2_session.hpp"

#include <algorithm>

namespace sonic::grpc {

namespace {
constexpr std::size_t kReadBufferBytes = 256 * 1024;
constexpr std::size_t kFrameHeaderBytes = 9;
}  // namespace

H2Session::H2Session(asio::ip::tcp::socket socket)
    : socket_(std::move(socket)), read_buffer_(kReadBufferBytes) {}

H2Session::~H2Session() {
  if (session_) nghttp2_session_del(session_);
}

void H2Session::install_common_callbacks(nghttp2_session_callbacks* callbacks) {
  nghttp2_session_callbacks_set_send_data_callback(callbacks, &H2Session::send_body);
}

int H2Session::submit_settings(const H2Settings& s, bool is_server) {
  std::vector<nghttp2_settings_entry> entries = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, s.max_concurrent_streams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE,
       std::min<std::uint32_t>(s.stream_window_bytes, 0x7fffffff)},
      {NGHTTP2_SETTINGS_MAX_FRAME_SIZE,
       std::clamp<std::uint32_t>(s.max_frame_bytes, 16384, 16777215)},
  };
  if (!is_server) entries.push_back({NGHTTP2_SETTINGS_ENABLE_PUSH, 0});
  int rv = nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, entries.data(), entries.size());
  if (rv != 0) return rv;
  return nghttp2_session_set_local_window_size(
      session_, NGHTTP2_FLAG_NONE, 0,
      static_cast<std::int32_t>(std::min<std::uint32_t>(s.connection_window_bytes, 0x7fffffff)));
}

nghttp2_data_provider H2Session::body_provider(OutgoingBody* body) {
  nghttp2_data_provider provider;
  provider.source.ptr = body;
  provider.read_callback = &H2Session::read_body;
  return provider;
}

ssize_t H2Session::read_body(nghttp2_session*, std::int32_t stream_id, std::uint8_t*,
                             std::size_t length, std::uint32_t* flags, nghttp2_data_source* source,
                             void* user_data) {
  auto* self = static_cast<H2Session*>(user_data);
  auto* body = static_cast<OutgoingBody*>(source->ptr);
  std::size_t left = body->size() - body->reserved;
  std::size_t n = std::min(length, left);
  body->reserved += n;
  *flags |= NGHTTP2_DATA_FLAG_NO_COPY;
  if (body->reserved == body->size()) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    self->on_body_end(stream_id, flags);
  }
  return static_cast<ssize_t>(n);
}

int H2Session::send_body(nghttp2_session*, nghttp2_frame*, const std::uint8_t* framehd,
                         std::size_t length, nghttp2_data_source* source, void* user_data) {
  auto* self = static_cast<H2Session*>(user_data);
  auto* body = static_cast<OutgoingBody*>(source->ptr);
  self->append_copy(framehd, kFrameHeaderBytes);  // padding is never enabled
  bool referenced = false;
  const auto& pieces = body->pieces();
  while (length > 0 && body->piece_index < pieces.size()) {
    const auto& piece = pieces[body->piece_index];
    std::size_t n = std::min(length, piece.size - body->piece_offset);
    const std::uint8_t* data = body->piece_data(piece) + body->piece_offset;
    if (piece.data) {
      self->append_external(data, n);
      referenced = true;
    } else {
      self->append_copy(data, n);
    }
    length -= n;
    body->piece_offset += n;
    if (body->piece_offset == piece.size) {
      ++body->piece_index;
      body->piece_offset = 0;
    }
  }
  if (referenced) {
    self->pending_.bodies.push_back(body->shared_from_this());
    ++body->in_flight_writes;
  }
  return 0;
}

void H2Session::append_copy(const std::uint8_t* data, std::size_t size) {
  auto& batch = pending_;
  if (!batch.spans.empty() && !batch.spans.back().external &&
      batch.spans.back().offset + batch.spans.back().size == batch.copied.size()) {
    batch.spans.back().size += size;
  } else {
    batch.spans.push_back({nullptr, batch.copied.size(), size});
  }
  batch.copied.append(reinterpret_cast<const char*>(data), size);
}

void H2Session::append_external(const std::uint8_t* data, std::size_t size) {
  pending_.spans.push_back({data, 0, size});
}

void H2Session::start_reading() {
  auto self = shared_from_this();
  socket_.async_read_some(
      asio::buffer(read_buffer_), [this, self](std::error_code ec, std::size_t n) {
        if (lost_) return;
        if (ec) {
          fail(ec == asio::error::eof ? std::string("connection closed by peer") : ec.message());
          return;
        }
        // nghttp2 must not be asked to send from inside its receive callbacks: flush() waits.
        receiving_ = true;
        ssize_t rv = nghttp2_session_mem_recv(session_, read_buffer_.data(), n);
        receiving_ = false;
        if (rv < 0) {
          fail(std::string("HTTP/2 protocol error: ") + nghttp2_strerror(static_cast<int>(rv)));
          return;
        }
        flush();
        if (!lost_) start_reading();
      });
}

void H2Session::flush() {
  if (lost_ || !session_ || receiving_) return;
  for (;;) {
    const std::uint8_t* data = nullptr;
    ssize_t n = nghttp2_session_mem_send(session_, &data);
    if (n < 0) {
      fail(std::string("HTTP/2 send error: ") + nghttp2_strerror(static_cast<int>(n)));
      return;
    }
    if (n == 0) break;
    append_copy(data, static_cast<std::size_t>(n));
  }
  if (!writing_ && !pending_.empty()) start_write();
  if (!writing_ && !nghttp2_session_want_read(session_) && !nghttp2_session_want_write(session_)) {
    fail("connection finished (GOAWAY)");
  }
}

void H2Session::start_write() {
  std::swap(active_, pending_);
  active_.buffers.reserve(active_.spans.size());
  for (const auto& span : active_.spans) {
    const std::uint8_t* base =
        span.external ? span.external
                      : reinterpret_cast<const std::uint8_t*>(active_.copied.data()) + span.offset;
    active_.buffers.emplace_back(base, span.size);
  }
  writing_ = true;
  auto self = shared_from_this();
  asio::async_write(socket_, active_.buffers, [this, self](std::error_code ec, std::size_t) {
    writing_ = false;
    auto bodies = std::move(active_.bodies);
    active_.clear();
    if (lost_ || ec) {
      // Nothing queued behind this write will be sent: release its bodies too, or the calls
      // parked on them would never complete.
      for (auto& body : pending_.bodies) bodies.push_back(std::move(body));
      pending_.clear();
    }
    for (auto& body : bodies) {
      if (--body->in_flight_writes == 0) on_body_released(*body);
    }
    if (lost_) return;
    if (ec) {
      fail("write failed: " + ec.message());
      return;
    }
    flush();
  });
}

void H2Session::close_socket() {
  std::error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

void H2Session::fail(const std::string& why) {
  if (lost_) return;
  lost_ = true;
  close_socket();
  on_connection_lost(why);
}

}  // namespace sonic::grpc

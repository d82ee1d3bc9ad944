#include "h2_session.hpp"

#include <algorithm>

#include "socket_io.hpp"

namespace sonic::net {

namespace {
constexpr std::size_t kFrameHeaderBytes = 9;
// Frames nghttp2 produces (acknowledgements, headers, resets) wait in nghttp2's own queue while
// this many copied bytes wait for the socket: a peer that does not read then trips nghttp2's
// flood guard (too many queued acknowledgements) instead of growing our write buffer.
constexpr std::size_t kMaxCopiedBacklog = 64 * 1024;
// A read goes straight to a tensor (read_destination) for at least this many bytes, from
// DATA frames at least this big: below that, the system calls it may add cost more than the
// copy they save. The 16 KiB frames most peers send never qualify; sonic's 256 KiB ones do.
constexpr std::size_t kMinDirectReadBytes = 64 * 1024;
// The largest DATA frame sent, when the peer accepts it (nghttp2 sends 16 KiB by default).
// Frames this big cost the sender one callback and the receiver one read per 256 KiB of a
// tensor, and let the receiver read a tensor straight into place; a small call queued
// behind one waits at most this many bytes, which loopback and a LAN send in microseconds.
constexpr std::int64_t kMaxDataFrameBytes = 256 * 1024;
constexpr std::int64_t kDefaultDataFrameBytes = 16 * 1024;  // HTTP/2's initial maximum
}  // namespace

H2Session::H2Session(asio::ip::tcp::socket socket, ReadBuffer reads,
                     std::shared_ptr<TlsContext> tls)
    : link_(std::move(socket), std::move(tls)),
      socket_reader_(reads, link_.secure()),
      next_read_bytes_(kReadBytes) {}

H2Session::~H2Session() {
  if (session_) nghttp2_session_del(session_);
}

void H2Session::install_common_callbacks(nghttp2_session_callbacks* callbacks) {
  nghttp2_session_callbacks_set_send_data_callback(callbacks, &H2Session::send_body);
  nghttp2_session_callbacks_set_on_begin_frame_callback(callbacks, &H2Session::on_begin_frame);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, &H2Session::on_data_chunk);
  nghttp2_session_callbacks_set_data_source_read_length_callback(
      callbacks, &H2Session::next_data_frame_length);
}

ssize_t H2Session::next_data_frame_length(nghttp2_session*, std::uint8_t, std::int32_t stream_id,
                                          std::int32_t session_window, std::int32_t stream_window,
                                          std::uint32_t peer_max_frame, void* user_data) {
  std::int64_t bytes =
      std::min<std::int64_t>({session_window, stream_window, peer_max_frame, kMaxDataFrameBytes});
  if (bytes > kDefaultDataFrameBytes) {
    // nghttp2 grows its frame buffer to this length for the rest of the session (only the
    // header goes there, the payload by reference): more than the default only for a body
    // that has more to send, so that a connection of small calls never grows it.
    const protocol::OutgoingBody* body =
        static_cast<H2Session*>(user_data)->sending_body(stream_id);
    const std::int64_t left =
        body ? static_cast<std::int64_t>(body->size() - body->reserved) : std::int64_t{0};
    bytes = std::max(std::min(bytes, left), kDefaultDataFrameBytes);
  }
  return static_cast<ssize_t>(std::max<std::int64_t>(bytes, 1));
}

int H2Session::on_begin_frame(nghttp2_session*, const nghttp2_frame_hd* header, void* user_data) {
  auto* self = static_cast<H2Session*>(user_data);
  ++self->frames_read_;
  self->peer_framed_ = true;
  // nghttp2 hands an unpadded DATA frame's payload over as it arrives, in order: counting the
  // chunks tells where the frame ends. Padding would hide it, so it is left to nghttp2.
  const bool unpadded_data =
      header->type == NGHTTP2_DATA && (header->flags & NGHTTP2_FLAG_PADDED) == 0;
  self->data_stream_ = header->stream_id;
  self->data_frame_bytes_ = unpadded_data ? header->length : 0;
  self->data_left_ = self->data_frame_bytes_;
  return 0;
}

int H2Session::on_data_chunk(nghttp2_session*, std::uint8_t, std::int32_t stream_id,
                             const std::uint8_t* data, std::size_t size, void* user_data) {
  auto* self = static_cast<H2Session*>(user_data);
  self->data_left_ -= std::min(size, self->data_left_);
  return self->on_data(stream_id, data, size);
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
  if (s.max_header_list_bytes != 0) {
    entries.push_back({NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, s.max_header_list_bytes});
  }
  int rv = nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, entries.data(), entries.size());
  if (rv != 0) return rv;
  return nghttp2_session_set_local_window_size(
      session_, NGHTTP2_FLAG_NONE, 0,
      static_cast<std::int32_t>(std::min<std::uint32_t>(s.connection_window_bytes, 0x7fffffff)));
}

nghttp2_data_provider H2Session::body_provider(protocol::OutgoingBody* body) {
  nghttp2_data_provider provider;
  provider.source.ptr = body;
  provider.read_callback = &H2Session::read_body;
  return provider;
}

ssize_t H2Session::read_body(nghttp2_session*, std::int32_t stream_id, std::uint8_t*,
                             std::size_t length, std::uint32_t* flags, nghttp2_data_source* source,
                             void* user_data) {
  auto* self = static_cast<H2Session*>(user_data);
  auto* body = static_cast<protocol::OutgoingBody*>(source->ptr);
  std::size_t left = body->size() - body->reserved;
  if (left == 0 && body->open) {  // a stream waiting for its next message
    body->deferred = true;
    return NGHTTP2_ERR_DEFERRED;
  }
  std::size_t n = std::min(length, left);
  body->reserved += n;
  *flags |= NGHTTP2_DATA_FLAG_NO_COPY;
  if (body->reserved == body->size() && !body->open) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    self->on_body_end(stream_id, flags);
  }
  return static_cast<ssize_t>(n);
}

void H2Session::resume(std::int32_t stream_id, protocol::OutgoingBody& body) {
  if (!body.deferred) return;  // nghttp2 reads the body on its own: it has not run dry
  body.deferred = false;
  nghttp2_session_resume_data(session_, stream_id);
}

int H2Session::send_body(nghttp2_session*, nghttp2_frame*, const std::uint8_t* framehd,
                         std::size_t length, nghttp2_data_source* source, void* user_data) {
  auto* self = static_cast<H2Session*>(user_data);
  auto* body = static_cast<protocol::OutgoingBody*>(source->ptr);
  self->writer_.copy(framehd, kFrameHeaderBytes);  // padding is never enabled
  bool referenced = false;
  const auto& pieces = body->pieces();
  while (length > 0 && body->piece_index < pieces.size()) {
    const auto& piece = pieces[body->piece_index];
    std::size_t n = std::min(length, piece.size - body->piece_offset);
    const std::uint8_t* data = body->piece_data(piece) + body->piece_offset;
    if (piece.data) {
      self->writer_.reference(data, n);
      referenced = true;
    } else {
      self->writer_.copy(data, n);
    }
    length -= n;
    body->piece_offset += n;
    if (body->piece_offset == piece.size) {
      ++body->piece_index;
      body->piece_offset = 0;
    }
  }
  if (referenced) {
    self->writer_.keep(body->shared_from_this());
    ++body->in_flight_writes;
  }
  return 0;
}

void H2Session::start_reading() {
  auto self = shared_from_this();
  std::size_t read_bytes = next_read_bytes_;
  if (data_frame_bytes_ >= kMinDirectReadBytes) {
    // The peer sends big DATA frames, and the last one's stream may be filling a tensor.
    protocol::MessageReader::Destination destination = read_destination(data_stream_);
    if (destination.size >= kMinDirectReadBytes && data_left_ >= kMinDirectReadBytes) {
      // The rest of the frame goes to the tensor: the socket writes it there and nghttp2
      // reads it from there, so the receiver finds it in place instead of copying it. The
      // read stops at the frame's end, so that what it brings is that stream's payload.
      std::uint8_t* data = destination.data;
      link_.async_read_some(
          asio::buffer(data, std::min(destination.size, data_left_)),
          // `hold` keeps the tensor's memory for the socket even if its call ends meanwhile.
          [this, self, data, hold = std::move(destination.hold)](std::error_code ec,
                                                                 std::size_t n) {
            on_read(ReadResult{data, n, ec});
          });
      return;
    }
    if (destination.size >= kMinDirectReadBytes && destination.size > data_left_) {
      // The tensor goes on past this frame: read to the next frame's header only, so that
      // its payload, most likely the tensor's next part, can go straight there in turn.
      read_bytes = data_left_ + kFrameHeaderBytes;
    }
  }
  socket_reader_.async_read(link_, read_bytes, [this, self](ReadResult read) { on_read(read); });
}

void H2Session::on_read(ReadResult read) {
  if (lost_) return;
  if (read.error) {
    return fail(read.error == asio::error::eof ? std::string("connection closed by peer")
                                               : read.error.message());
  }
  if (read.size > 0) {
    if (!peer_framed_ && peer_first_bytes_.empty()) {
      peer_first_bytes_.assign(reinterpret_cast<const char*>(read.data),
                               std::min<std::size_t>(read.size, 32));
    }
    // nghttp2 must not be asked to send from inside its receive callbacks: flush() waits.
    receiving_ = true;
    frames_read_ = 0;
    ssize_t rv = nghttp2_session_mem_recv(session_, read.data, read.size);
    receiving_ = false;
    next_read_bytes_ = frames_read_ > kManyFrames ? kBusyReadBytes : kReadBytes;
    if (rv < 0) {
      return fail(std::string("HTTP/2 protocol error: ") + nghttp2_strerror(static_cast<int>(rv)));
    }
    flush();
  }
  if (!lost_) start_reading();
}

void H2Session::flush() {
  if (lost_ || !session_ || receiving_) return;
  while (!writer_.writing() || writer_.pending_copied_bytes() < kMaxCopiedBacklog) {
    const std::uint8_t* data = nullptr;
    ssize_t n = nghttp2_session_mem_send(session_, &data);
    if (n < 0) {
      fail(std::string("HTTP/2 send error: ") + nghttp2_strerror(static_cast<int>(n)));
      return;
    }
    if (n == 0) break;
    writer_.copy(data, static_cast<std::size_t>(n));
  }
  if (!writer_.writing() && writer_.has_pending()) start_write();
  if (!writer_.writing() && !nghttp2_session_want_read(session_) &&
      !nghttp2_session_want_write(session_)) {
    fail("connection finished (GOAWAY)");
  }
}

void H2Session::start_write() {
  auto self = shared_from_this();
  link_.async_write(writer_.begin_write(), [this, self](std::error_code ec, std::size_t) {
    last_write_ = std::chrono::steady_clock::now();
    auto holds = writer_.end_write();
    if (lost_ || ec) {
      // Nothing queued behind this write will be sent: release its bodies too, or the calls
      // waiting for them would never complete.
      for (auto& hold : writer_.drop_pending()) holds.push_back(std::move(hold));
    }
    release(std::move(holds));
    if (lost_) return;
    if (ec) {
      fail("write failed: " + ec.message());
      return;
    }
    flush();
  });
}

void H2Session::release(std::vector<std::shared_ptr<void>> holds) {
  for (auto& hold : holds) {
    auto& body = *std::static_pointer_cast<protocol::OutgoingBody>(hold);
    if (--body.in_flight_writes == 0) on_body_released(body);
  }
}

void H2Session::close_socket() { link_.close(); }

void H2Session::fail(const std::string& why) {
  if (lost_) return;
  lost_ = true;
  close_socket();
  on_connection_lost(why);
  // A write under way hands its batches back when it fails; without one, nothing would.
  if (!writer_.writing()) release(writer_.drop_pending());
}

}  // namespace sonic::net

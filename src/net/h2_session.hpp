// The HTTP/2 plumbing of gRPC's client and server halves: an nghttp2 session driven over an Asio
// TCP socket (or TLS over one), with gathered writes that send tensor bytes straight from their
// memory. Everything here runs on the connection's io_context thread.
#pragma once

#include <nghttp2/nghttp2.h>

#include <asio.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/grpc_wire.hpp"
#include "socket_io.hpp"
#include "sonic/detail/export.hpp"

namespace sonic::net {

/// An HTTP/2 header field referring to `name` and `value`, which must outlive its submission.
inline nghttp2_nv make_header(std::string_view name, std::string_view value) {
  return {reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(),
          value.size(), NGHTTP2_NV_FLAG_NONE};
}

/// Settings both halves apply to their session.
struct H2Settings {
  std::uint32_t stream_window_bytes = 16u << 20;
  std::uint32_t connection_window_bytes = 256u << 20;
  std::uint32_t max_frame_bytes = 1u << 20;  // bigger DATA frames: fewer headers and callbacks
  std::uint32_t max_concurrent_streams = 1024;
  /// Announced to the peer when not 0 (SETTINGS_MAX_HEADER_LIST_SIZE).
  std::uint32_t max_header_list_bytes = 0;
};

/// Owns the socket and the nghttp2 session; derived classes create the session (client or
/// server) and handle stream events.
class SONIC_EXPORT H2Session : public std::enable_shared_from_this<H2Session> {
 public:
  /// `reads`: kOwn for a client's connection, kThreads for a server's (socket_io.hpp). With
  /// `tls`, the session speaks TLS, once link_.handshake() has made the link secure.
  H2Session(asio::ip::tcp::socket socket, ReadBuffer reads, std::shared_ptr<TlsContext> tls);
  virtual ~H2Session();
  H2Session(const H2Session&) = delete;
  H2Session& operator=(const H2Session&) = delete;

 protected:
  /// Sets the callbacks every session needs (DATA without copies); derived classes add theirs.
  static void install_common_callbacks(nghttp2_session_callbacks* callbacks);
  /// Sends the initial SETTINGS and enlarges the connection window.
  int submit_settings(const H2Settings& settings, bool is_server);
  /// A data provider streaming `body`, which must outlive the stream. An open body (a
  /// stream's) keeps the stream open when all of it was sent; call resume() once a message
  /// was appended to it or it was closed.
  static nghttp2_data_provider body_provider(protocol::OutgoingBody* body);
  /// After a message was appended to `stream_id`'s body, or it was closed: the next flush()
  /// sends the message, or the body's end. Calls no callback (stream objects stay valid).
  void resume(std::int32_t stream_id, protocol::OutgoingBody& body);

  /// Starts the read loop (call once the session exists).
  void start_reading();
  /// Bytes handed to the socket layer but not yet written, copied or referenced.
  std::size_t unwritten_bytes() const noexcept {
    return writer_.pending_bytes() + writer_.active_bytes();
  }
  /// When the socket last took bytes (or the session began).
  std::chrono::steady_clock::time_point last_write_progress() const noexcept { return last_write_; }
  /// Moves whatever nghttp2 wants to send into the socket; call after submitting anything.
  /// Inside nghttp2's receive callbacks it does nothing: the read loop flushes afterwards.
  void flush();
  /// Whether the peer has sent a valid HTTP/2 frame yet.
  bool peer_framed() const noexcept { return peer_framed_; }
  /// The first bytes the peer sent (at most 32), for telling what it speaks when not HTTP/2.
  const std::string& peer_first_bytes() const noexcept { return peer_first_bytes_; }

  /// Runs `work()` as nghttp2's receive callbacks run, outside them (a handler of the session's
  /// own): flush() waits until it returns, so that no stream closes under it; then flushes.
  template <typename Work>
  void as_received(Work work) {
    receiving_ = true;
    work();
    receiving_ = false;
    flush();
  }

  /// Closes the socket; outstanding operations end with operation_aborted.
  void close_socket();
  /// Closes the connection and reports it lost (once).
  void fail(const std::string& why);

  /// A chunk of `stream_id`'s DATA, valid during the call (nghttp2's on_data_chunk_recv).
  /// Returns 0, or an nghttp2 error code that ends the connection.
  virtual int on_data(std::int32_t stream_id, const std::uint8_t* data, std::size_t size) = 0;
  /// Where the rest of `stream_id`'s DATA would be copied to anyway, when that is known (the
  /// tensor its message is filling): the next read goes straight there, and feeds the session
  /// from there (see protocol::MessageReader::tensor_destination).
  virtual protocol::MessageReader::Destination read_destination(std::int32_t stream_id) {
    (void)stream_id;
    return {};
  }

  /// The body `stream_id` sends (the one its body_provider() was made for), or null.
  virtual const protocol::OutgoingBody* sending_body(std::int32_t stream_id) {
    (void)stream_id;
    return nullptr;
  }

  /// The connection failed (peer closed, reset, protocol error); called once.
  virtual void on_connection_lost(const std::string& why) = 0;
  /// A body's borrowed bytes are no longer referenced by any pending write.
  virtual void on_body_released(protocol::OutgoingBody& body) { (void)body; }
  /// The body of a stream was fully handed to the socket layer; `flags` may get
  /// NGHTTP2_DATA_FLAG_NO_END_STREAM (to send trailers after it).
  virtual void on_body_end(std::int32_t stream_id, std::uint32_t* flags) {
    (void)stream_id;
    (void)flags;
  }

  Link link_;
  nghttp2_session* session_ = nullptr;
  bool lost_ = false;  // on_connection_lost was called

 private:
  void start_write();
  void on_read(ReadResult read);
  // The bodies of a written (or dropped) batch: those no write reads any more are released.
  void release(std::vector<std::shared_ptr<void>> holds);

  static ssize_t read_body(nghttp2_session* session, std::int32_t stream_id, std::uint8_t* buf,
                           std::size_t length, std::uint32_t* flags, nghttp2_data_source* source,
                           void* user_data);
  static int send_body(nghttp2_session* session, nghttp2_frame* frame, const std::uint8_t* framehd,
                       std::size_t length, nghttp2_data_source* source, void* user_data);
  static int on_begin_frame(nghttp2_session* session, const nghttp2_frame_hd* header,
                            void* user_data);
  static ssize_t next_data_frame_length(nghttp2_session* session, std::uint8_t frame_type,
                                        std::int32_t stream_id, std::int32_t session_window,
                                        std::int32_t stream_window, std::uint32_t peer_max_frame,
                                        void* user_data);
  static int on_data_chunk(nghttp2_session* session, std::uint8_t flags, std::int32_t stream_id,
                           const std::uint8_t* data, std::size_t size, void* user_data);

  GatherWriter writer_;
  std::chrono::steady_clock::time_point last_write_ = std::chrono::steady_clock::now();
  SocketReader socket_reader_;
  std::size_t frames_read_ = 0;  // frames in the read under way (see kManyFrames)
  std::size_t next_read_bytes_;
  // The frame being received, or last received: its stream, and when it is unpadded DATA,
  // its payload's length and what of it is still to come.
  std::int32_t data_stream_ = 0;
  std::size_t data_frame_bytes_ = 0;
  std::size_t data_left_ = 0;
  bool peer_framed_ = false;
  std::string peer_first_bytes_;
  bool receiving_ = false;  // inside nghttp2_session_mem_recv
};

}  // namespace sonic::net

// One TCP connection (or TLS over one) carrying sonic's frames (proto/tcp_framing.md), for both
// halves of the TCP transport: reads feed a FrameReader, frames to send gather into one write at a
// time. Runs on one io_context thread; not thread-safe.
#pragma once

#include <asio.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "protocol/tcp_frame.hpp"
#include "socket_io.hpp"
#include "sonic/detail/export.hpp"

namespace sonic::net {

class SONIC_EXPORT FrameStream : public std::enable_shared_from_this<FrameStream> {
 public:
  /// A stream over an accepted socket (a server's; ReadBuffer::kThreads): `account` is
  /// told of every byte received frames hold, and zstd tensors are handed over compressed
  /// (protocol::tcp::decompress). With `tls`, over TLS once link().handshake() is done.
  FrameStream(asio::ip::tcp::socket socket, std::size_t max_message_bytes,
              std::shared_ptr<protocol::ReceiveAccount> account, std::shared_ptr<TlsContext> tls);
  /// A stream whose socket is connected later (socket()): a client's, with a read buffer of
  /// its own; over TLS with `tls`, once link().handshake() is done.
  FrameStream(asio::io_context& io, std::size_t max_message_bytes, std::shared_ptr<TlsContext> tls);
  virtual ~FrameStream() = default;
  FrameStream(const FrameStream&) = delete;
  FrameStream& operator=(const FrameStream&) = delete;

  asio::ip::tcp::socket& socket() { return link_.socket(); }
  Link& link() { return link_; }
  bool open() const { return !closed_; }

  /// Starts reading; frames go to on_frame(). While reading_paused() says so, or while a frame
  /// waits for the account to admit it, the stream reads nothing (the peer's sends back up into
  /// its socket) and looks again every few milliseconds.
  void start_reading();
  /// Queues a frame; frames go out in order. With a non-zero `id`, bytes the frame references
  /// (large tensors, sent without a copy) are tracked: writing(id) is true until no write
  /// reads them, and on_released(id) follows then.
  void send(protocol::tcp::OutgoingFrame frame, std::uint64_t id = 0);
  /// Whether a write still reads bytes of the frame sent with `id`.
  bool writing(std::uint64_t id) const { return referenced_.count(id) != 0; }
  /// Closes the socket; on_lost(why) follows once. Frames being written are released when
  /// their write fails, soon after.
  void close(const std::string& why);
  /// Bytes queued for the socket or being written, copied or referenced.
  std::size_t unwritten_bytes() const noexcept {
    return writer_.pending_bytes() + writer_.active_bytes();
  }
  /// Bytes copied into the queue (pings, errors, small frames).
  std::size_t unwritten_copies() const noexcept { return writer_.pending_copied_bytes(); }
  /// When the socket last took bytes (or the stream began).
  std::chrono::steady_clock::time_point last_write_progress() const noexcept { return last_write_; }
  /// Whether a frame has begun arriving and not ended (it may be waiting for admission).
  bool mid_frame() const noexcept { return reader_.mid_frame(); }
  /// Whether a frame waits for the account to admit it (the stream reads nothing meanwhile).
  bool waiting_admission() const noexcept { return reader_.waiting_admission(); }
  /// Reads so far: frames delivered with the same count arrived together.
  std::uint64_t reads() const noexcept { return reads_; }

 protected:
  virtual void on_frame(protocol::tcp::Frame frame) = 0;
  virtual void on_lost(const std::string& why) = 0;
  /// No write reads the bytes of frame `id` any more.
  virtual void on_released(std::uint64_t id) { (void)id; }
  /// The peer broke the framing: by default, the connection ends.
  virtual void on_framing_error(const Error& error) { close(error.message()); }
  /// Whether to read nothing for now (memory limits, a peer that does not read its answers).
  virtual bool reading_paused() { return false; }

 private:
  void write_next();
  void on_read(ReadResult read);
  void deliver_frames();
  void release(std::vector<std::shared_ptr<void>> holds);

  Link link_;
  protocol::tcp::FrameReader reader_;
  GatherWriter writer_;
  asio::steady_timer pause_;
  std::chrono::steady_clock::time_point last_write_ = std::chrono::steady_clock::now();
  std::unordered_set<std::uint64_t> referenced_;  // ids of frames a write still reads
  bool closed_ = false;
  std::uint64_t reads_ = 0;
  SocketReader socket_reader_;   // a server's: ReadBuffer::kThreads; a client's: kOwn
  std::size_t next_read_bytes_;  // smaller after a read of many frames (see kManyFrames)
};

}  // namespace sonic::net

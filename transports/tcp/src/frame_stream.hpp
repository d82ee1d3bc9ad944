// One TCP connection carrying frames, for both halves of the transport: reads feed a
// FrameReader, writes are queued frames sent with gathered writes, one at a time. Runs on one
// io_context thread; not thread-safe.
#pragma once

#include <asio.hpp>

#include <array>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "frame.hpp"

namespace sonic::tcp {

class FrameStream : public std::enable_shared_from_this<FrameStream> {
 public:
  /// `on_frame` gets every frame received; `on_lost` is called once when the connection ends
  /// (a read or write error, a framing error, or close()), with why.
  FrameStream(asio::ip::tcp::socket socket, std::size_t max_message_bytes)
      : socket_(std::move(socket)), reader_(max_message_bytes) {}
  /// A stream whose socket connect() will open.
  FrameStream(asio::io_context& io, std::size_t max_message_bytes)
      : socket_(io), reader_(max_message_bytes) {}
  virtual ~FrameStream() = default;

  asio::ip::tcp::socket& socket() { return socket_; }
  bool open() const { return !closed_; }

  /// Starts reading; frames go to on_frame().
  void start_reading() {
    auto self = shared_from_this();
    socket_.async_read_some(asio::buffer(buffer_), [self](std::error_code ec, std::size_t n) {
      if (self->closed_) return;
      if (ec) return self->close(ec == asio::error::eof ? "closed by the peer" : ec.message());
      auto fed = self->reader_.feed(self->buffer_.data(), n);
      auto frames = std::move(self->reader_.frames());
      self->reader_.frames().clear();
      for (auto& frame : frames) {
        if (self->closed_) return;
        self->on_frame(std::move(frame));
      }
      if (!fed) return self->on_framing_error(fed.error());
      if (!self->closed_) self->start_reading();
    });
  }

  /// Queues a frame; frames go out in order.
  void send(OutgoingFrame frame) {
    if (closed_) return;
    queue_.push_back(std::move(frame));
    if (!writing_) write_next();
  }

  /// Closes the socket; on_lost(why) follows once.
  void close(const std::string& why) {
    if (closed_) return;
    closed_ = true;
    std::error_code ignored;
    socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    // The queue stays: a write in flight may still refer to it until its handler runs.
    on_lost(why);
  }

 protected:
  virtual void on_frame(Frame frame) = 0;
  virtual void on_lost(const std::string& why) = 0;
  /// The peer broke the framing: by default, the connection ends.
  virtual void on_framing_error(const Error& error) { close(error.message()); }

 private:
  void write_next() {
    if (queue_.empty() || closed_) {
      writing_ = false;
      return;
    }
    writing_ = true;
    // Gather every queued frame into one write, up to a bound on the iovec count.
    std::vector<asio::const_buffer> buffers;
    std::size_t frames = 0;
    for (const auto& frame : queue_) {
      if (frames > 0 && buffers.size() + frame.pieces.size() > 512) break;
      for (const auto& [data, size] : frame.pieces) buffers.emplace_back(data, size);
      ++frames;
    }
    auto self = shared_from_this();
    asio::async_write(socket_, buffers, [self, frames](std::error_code ec, std::size_t) {
      if (self->closed_) return;
      if (ec) return self->close("write failed: " + ec.message());
      for (std::size_t i = 0; i < frames; ++i) self->queue_.pop_front();
      self->write_next();
    });
  }

  asio::ip::tcp::socket socket_;
  FrameReader reader_;
  std::array<std::uint8_t, 256 * 1024> buffer_{};
  std::deque<OutgoingFrame> queue_;  // the front frames are being written
  bool writing_ = false;
  bool closed_ = false;
};

}  // namespace sonic::tcp

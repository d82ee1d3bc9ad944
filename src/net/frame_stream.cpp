#include "frame_stream.hpp"

#include <utility>

#include "socket_io.hpp"

namespace sonic::net {

namespace {

// Pieces shorter than this are copied into the write: an iovec costs more than the copy.
constexpr std::size_t kMinReferencedBytes = 2048;
// How often a paused stream asks whether it may read again.
constexpr std::chrono::milliseconds kPausePoll{5};

// A frame whose pieces a write references, until that write is over.
struct HeldFrame {
  protocol::tcp::OutgoingFrame frame;
  std::uint64_t id;
};

}  // namespace

FrameStream::FrameStream(asio::ip::tcp::socket socket, std::size_t max_message_bytes,
                         std::shared_ptr<protocol::ReceiveAccount> account,
                         std::shared_ptr<TlsContext> tls)
    : link_(std::move(socket), std::move(tls)),
      reader_(max_message_bytes, std::move(account), true),
      pause_(link_.socket().get_executor()),
      socket_reader_(ReadBuffer::kThreads, link_.secure()),
      next_read_bytes_(kReadBytes) {}

FrameStream::FrameStream(asio::io_context& io, std::size_t max_message_bytes,
                         std::shared_ptr<TlsContext> tls)
    : link_(asio::ip::tcp::socket(io), std::move(tls)),
      reader_(max_message_bytes),
      pause_(io),
      socket_reader_(ReadBuffer::kOwn, link_.secure()),
      next_read_bytes_(kReadBytes) {}

void FrameStream::start_reading() {
  if (closed_) return;
  auto self = shared_from_this();
  if (reader_.waiting_admission()) {
    auto admitted = reader_.retry_admission();
    deliver_frames();
    if (closed_) return;
    if (!admitted) return on_framing_error(admitted.error());
  }
  if (reader_.waiting_admission() || reading_paused()) {
    pause_.expires_after(kPausePoll);
    pause_.async_wait([self](std::error_code ec) {
      if (!ec) self->start_reading();
    });
    return;
  }
  socket_reader_.async_read(link_, next_read_bytes_,
                            [self](ReadResult read) { self->on_read(read); });
}

void FrameStream::on_read(ReadResult read) {
  if (closed_) return;
  if (read.error) {
    return close(read.error == asio::error::eof ? "closed by the peer" : read.error.message());
  }
  ++reads_;
  auto fed = reader_.feed(read.data, read.size);
  next_read_bytes_ = reader_.frames().size() > kManyFrames ? kBusyReadBytes : kReadBytes;
  deliver_frames();
  if (closed_) return;
  if (!fed) return on_framing_error(fed.error());
  start_reading();
}

void FrameStream::deliver_frames() {
  auto frames = std::move(reader_.frames());
  reader_.frames().clear();
  for (auto& frame : frames) {
    if (closed_) return;
    on_frame(std::move(frame));
  }
}

void FrameStream::send(protocol::tcp::OutgoingFrame frame, std::uint64_t id) {
  if (closed_) return;
  bool referenced = false;
  for (const auto& [data, size] : frame.pieces) {
    if (size < kMinReferencedBytes) {
      writer_.copy(data, size);
    } else {
      writer_.reference(data, size);
      referenced = true;
    }
  }
  if (referenced) {
    // The frame's own storage (headers, compressed tensors) and the tensors it keeps must
    // outlive the write; borrowed tensors are the caller's, who learns when they are free.
    if (id != 0) referenced_.insert(id);
    writer_.keep(std::make_shared<HeldFrame>(HeldFrame{std::move(frame), id}));
  }
  if (!writer_.writing()) write_next();
}

void FrameStream::close(const std::string& why) {
  if (closed_) return;
  closed_ = true;
  pause_.cancel();
  link_.close();
  on_lost(why);
  // A write under way hands its batches back when it fails; without one, nothing would.
  if (!writer_.writing()) release(writer_.drop_pending());
}

void FrameStream::write_next() {
  if (!writer_.has_pending() || closed_) return;
  auto self = shared_from_this();
  link_.async_write(writer_.begin_write(), [self](std::error_code ec, std::size_t) {
    self->last_write_ = std::chrono::steady_clock::now();
    auto holds = self->writer_.end_write();
    if (self->closed_ || ec) {
      for (auto& hold : self->writer_.drop_pending()) holds.push_back(std::move(hold));
    }
    self->release(std::move(holds));
    if (self->closed_) return;
    if (ec) return self->close("write failed: " + ec.message());
    self->write_next();
  });
}

void FrameStream::release(std::vector<std::shared_ptr<void>> holds) {
  for (auto& hold : holds) {
    std::uint64_t id = std::static_pointer_cast<HeldFrame>(hold)->id;
    hold.reset();
    if (id != 0 && referenced_.erase(id) != 0) on_released(id);
  }
}

}  // namespace sonic::net

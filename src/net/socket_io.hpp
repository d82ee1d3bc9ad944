// A connection's socket I/O, shared by both socket transports and both servers.
//
// Reading: every connection reads speculatively into a buffer of its own, which asio's reactor
// serves without re-arming (an epoll_ctl per read, the cost of waiting for readiness instead).
// A client's few connections own a full read's buffer. A server's many own only a small one, so
// that an idle connection, or one whose peer sends nothing, holds little: a read that fills it
// goes on at once into its network thread's buffer, and the handler consumes it all before it
// returns.
//
// Writing: what a connection has to send goes out as one gathered write at a time, of bytes
// copied in (protocol frames, small runs) and bytes referenced where their owner keeps them
// (tensors), so that large tensors go from their memory to the socket without a copy.
#pragma once

#include <asio.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "link.hpp"
#include "sonic/detail/export.hpp"

namespace sonic::net {

// ---- Reading ------------------------------------------------------------------------------------

/// Bytes read from a socket at once.
inline constexpr std::size_t kReadBytes = 256 * 1024;
/// Bytes read at once from a connection whose last read held many frames: each costs work
/// before the handler returns, and one connection's pings must not hold up a network thread
/// that serves others.
inline constexpr std::size_t kBusyReadBytes = 16 * 1024;
/// Frames in one read above which a connection's next read is kBusyReadBytes (a 256 KiB read
/// of tensor data holds a few).
inline constexpr std::size_t kManyFrames = 256;

/// Bytes read, and where they are.
struct ReadResult {
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;
  std::error_code error;  ///< asio::error::eof when the peer closed
};

/// Where a connection reads into.
enum class ReadBuffer {
  kThreads,  ///< kFirstReadBytes of its own, then its network thread's (a server's many)
  kOwn,      ///< a buffer of its own, kReadBytes (a client's few)
};

/// What a ReadBuffer::kThreads connection owns: a small request fits in one read.
inline constexpr std::size_t kFirstReadBytes = 4096;
/// What a TLS connection's reads hand at most: one record's plaintext.
inline constexpr std::size_t kTlsRecordBytes = 16 * 1024;

/// Reads into `socket` what follows the `head_size` bytes of `head` (a read that filled the
/// connection's buffer), into the calling thread's buffer behind a copy of them: returns them
/// all, valid until the thread's next read. An error after the head is left for the next read.
SONIC_EXPORT ReadResult read_more_available(asio::ip::tcp::socket& socket, const std::uint8_t* head,
                                            std::size_t head_size, std::size_t max_bytes);

/// A connection's reads from its link. Not thread-safe: one read at a time.
class SocketReader {
 public:
  /// A TLS link (`secure`) hands one record per read at most: a client's reader owns a
  /// record's buffer, and no reader reads more behind a full one (OpenSSL holds what follows).
  SocketReader(ReadBuffer kind, bool secure)
      : more_(kind == ReadBuffer::kThreads && !secure),
        capacity_(kind == ReadBuffer::kThreads ? kFirstReadBytes
                  : secure                     ? kTlsRecordBytes
                                               : kReadBytes),
        buffer_(new std::uint8_t[capacity_]) {}  // not zeroed: nothing reads it first

  /// Reads from `link` once it has bytes and calls `handler(ReadResult)` on the socket's
  /// thread with at most `max_bytes` of them (never zero bytes without an error). The bytes are
  /// valid until the handler returns. `link` and this reader must outlive the operation,
  /// which ends with asio::error::operation_aborted when the socket closes.
  template <typename Handler>
  void async_read(Link& link, std::size_t max_bytes, Handler handler) {
    asio::ip::tcp::socket& socket = link.socket();
    if (more_ && !socket.non_blocking()) {
      std::error_code ignored;  // for read_more_available; the getter is free, the setter not
      socket.non_blocking(true, ignored);
    }
    const std::size_t first = std::min(max_bytes, capacity_);
    std::uint8_t* buffer = buffer_.get();
    link.async_read_some(asio::buffer(buffer, first),
                         [&socket, buffer, first, max_bytes, more = more_,
                          handler = std::move(handler)](std::error_code ec, std::size_t n) mutable {
                           if (ec) return handler(ReadResult{buffer, 0, ec});
                           if (!more || n < first) return handler(ReadResult{buffer, n, {}});
                           handler(read_more_available(socket, buffer, n, max_bytes));
                         });
  }

 private:
  bool more_;  // a read that fills the buffer goes on into the thread's (read_more_available)
  std::size_t capacity_;
  std::unique_ptr<std::uint8_t[]> buffer_;
};

// ---- Writing ------------------------------------------------------------------------------------

/// Two batches: the pending one fills while the active one is written. A referenced run is
/// covered by a hold (a shared pointer to whatever owns that memory, or tracks who waits for
/// it): the batch keeps its holds until its write is over, then hands them back, so that the
/// owner learns when the socket no longer reads its bytes. Not thread-safe.
class SONIC_EXPORT GatherWriter {
 public:
  /// Appends a copy of the bytes.
  void copy(const void* data, std::size_t size);
  /// Appends the bytes by reference; `hold` must keep them valid (see keep()).
  void reference(const void* data, std::size_t size);
  /// The pending batch keeps `hold` until it has been written.
  void keep(std::shared_ptr<void> hold);

  /// Whether a write is under way.
  bool writing() const noexcept { return writing_; }
  /// Whether anything waits to be written.
  bool has_pending() const noexcept { return !pending_.spans.empty(); }
  /// Bytes waiting to be written, and being written.
  std::size_t pending_bytes() const noexcept { return pending_.bytes; }
  std::size_t active_bytes() const noexcept { return active_.bytes; }
  /// Bytes copied into the pending batch.
  std::size_t pending_copied_bytes() const noexcept { return pending_.copied.size(); }

  /// Makes the pending batch the active one; its buffers are what to write. Precondition:
  /// !writing().
  const std::vector<asio::const_buffer>& begin_write();
  /// The active write is over (written or failed): its holds, to release.
  std::vector<std::shared_ptr<void>> end_write();
  /// Forgets the pending batch (the connection is gone): its holds, to release.
  std::vector<std::shared_ptr<void>> drop_pending();

 private:
  struct Batch {
    std::string copied;  // every copied run, back to back
    struct Span {
      const std::uint8_t* external;  // null: `offset` into `copied`
      std::size_t offset;
      std::size_t size;
    };
    std::vector<Span> spans;
    std::vector<std::shared_ptr<void>> holds;
    std::vector<asio::const_buffer> buffers;
    std::size_t bytes = 0;
    void clear();
  };

  Batch pending_;  // being filled
  Batch active_;   // being written
  bool writing_ = false;
};

}  // namespace sonic::net

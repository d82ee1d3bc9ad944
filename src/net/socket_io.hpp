// A connection's socket I/O, shared by both socket transports and both servers.
//
// Reading, two ways. A server's connection waits until its socket is readable, then reads into
// its network thread's buffer and consumes everything before the handler returns: an idle
// connection, or one whose peer sends nothing, holds no read buffer. A client's few connections
// each own a buffer and read into it speculatively, which saves the reactor's re-arm (an
// epoll_ctl) that every wait costs: a syscall per read on the request path.
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

/// Reads what `socket` holds now, at most `max_bytes` (up to kReadBytes), into the calling
/// thread's buffer (made on its first use). Returns the bytes and where they are; zero bytes with
/// no error when nothing was there. The bytes are valid until the thread's next read. The socket
/// must be in non-blocking mode.
struct ReadResult {
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;
  std::error_code error;  ///< asio::error::eof when the peer closed
};
SONIC_EXPORT ReadResult read_available(asio::ip::tcp::socket& socket,
                                       std::size_t max_bytes = kReadBytes);

/// Where a connection reads into.
enum class ReadBuffer {
  kThreads,  ///< its network thread's buffer, after a wait (a server's many connections)
  kOwn,      ///< a buffer of its own, kReadBytes, kept while it lives (a client's few)
};

/// Reads from `socket` once it has bytes and calls `handler(ReadResult)` on the socket's thread
/// with at most `max_bytes` of them (never zero bytes without an error). `own` is the caller's
/// buffer of kReadBytes, which must stay valid until the handler runs, or null to read into the
/// thread's buffer (ReadBuffer::kThreads; the bytes are then valid until the thread's next
/// read). Operations end with asio::error::operation_aborted when the socket closes.
template <typename Handler>
void async_read_available(asio::ip::tcp::socket& socket, std::uint8_t* own, std::size_t max_bytes,
                          Handler handler) {
  if (own) {
    socket.async_read_some(
        asio::buffer(own, std::min(max_bytes, kReadBytes)),
        [own, handler = std::move(handler)](std::error_code ec, std::size_t n) mutable {
          handler(ReadResult{own, ec ? 0 : n, ec});
        });
    return;
  }
  if (!socket.non_blocking()) {  // the getter is free; the setter is an ioctl
    std::error_code ignored;
    socket.non_blocking(true, ignored);
  }
  socket.async_wait(asio::socket_base::wait_read,
                    [&socket, max_bytes, handler = std::move(handler)](std::error_code ec) mutable {
                      if (ec) return handler(ReadResult{nullptr, 0, ec});
                      ReadResult read = read_available(socket, max_bytes);
                      if (read.size == 0 && !read.error) {  // woken for nothing: wait again
                        return async_read_available(socket, nullptr, max_bytes, std::move(handler));
                      }
                      handler(read);
                    });
}

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

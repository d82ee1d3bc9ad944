// Reading sockets without a buffer per connection: a connection waits until its socket is
// readable, then reads into its network thread's buffer and consumes everything before the
// handler returns. An idle connection, or one whose peer sends nothing, holds no read buffer.
#pragma once

#include <asio.hpp>

#include <cstddef>
#include <cstdint>

#include "sonic/detail/export.hpp"

namespace sonic::net {

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

}  // namespace sonic::net

// The frames sonic-server and a Python model's stub process exchange over their socketpair.
//
// One frame is one message:
//
//   u32 header_size         little-endian, at most kMaxHeaderBytes
//   u32 buffer_count        little-endian, at most kMaxBuffers
//   u64 buffer_size[count]  little-endian, their sum at most FrameLimits::max_buffer_bytes
//   header                  header_size bytes: a JSON object (what the message says)
//   buffer 0, 1, ...        the tensors' bytes, each exactly as declared, no padding
//
// A tensor names its buffer by index in the header. Every length is checked against its limit
// before anything is allocated for it, so a frame of garbage costs at most the limits (the
// header's, and the buffers' max_buffer_bytes) and an error, not the server's memory; what
// the tensors made from a frame may cost besides is bounded by tensors_of (stub_tensors.hpp). The
// stub's side is backends/python/python/ sonic_python_stub.py (read_frame, write_frame), which must
// agree with this file.
#pragma once

#include <sys/types.h>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sonic/error.hpp"

namespace sonic::python_backend {

inline constexpr std::size_t kMaxHeaderBytes = std::size_t{16} << 20;
inline constexpr std::size_t kMaxBuffers = 65536;

/// What a received frame may declare.
struct FrameLimits {
  /// The sum of a frame's buffers: 2 GiB unless the model's `max_message_bytes` parameter says
  /// otherwise.
  std::uint64_t max_buffer_bytes = std::uint64_t{2} << 30;
};

/// How a read or write sees that the peer's process ended while its socket stays open (a child
/// it forked holds the socket too): a pidfd of it, readable once it ended; or, where the kernel
/// has no pidfd_open, its pid, checked every 50 ms. Both unset: the socket alone tells.
struct PeerWatch {
  int pidfd = -1;
  pid_t pid = -1;
};

/// A span of bytes to send, owned by the caller until write_frame() returns.
struct ByteRange {
  const void* data;
  std::size_t size;
};

/// A frame received: its header, and its buffers within one 64-byte aligned allocation that
/// tensors made from them keep alive.
struct Frame {
  std::string header;
  std::shared_ptr<const void> storage;
  std::vector<ByteRange> buffers;
};

/// Sends one frame on a stream socket, blocking until all of it is handed over or `deadline`
/// passes (none: as long as it takes): DEADLINE_EXCEEDED past it, when the peer stopped reading,
/// with part of the frame sent. Never raises SIGPIPE: a peer that is gone (or, with `watch`,
/// whose process ended) is UNAVAILABLE.
Result<void> write_frame(int fd, const std::string& header, const std::vector<ByteRange>& buffers,
                         std::optional<std::chrono::steady_clock::time_point> deadline,
                         const PeerWatch& watch = {});

/// Reads one frame. `deadline` bounds the wait for all of it (none: wait as long as it takes):
/// DEADLINE_EXCEEDED past it. UNAVAILABLE when the peer closed the socket (at a frame's start:
/// "closed"; within one: "closed within a frame"), or when, with `watch`, its process ended
/// and nothing is left to read ("ended"); DATA_LOSS for a length beyond its limit.
Result<Frame> read_frame(int fd, std::optional<std::chrono::steady_clock::time_point> deadline,
                         const FrameLimits& limits, const PeerWatch& watch = {});

}  // namespace sonic::python_backend

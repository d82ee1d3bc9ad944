// Test support for hostile peers: a plain TCP connection to a loopback port that sends exactly
// the bytes a test gives it, whatever they mean, and reads only when told to.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sonic::test {

/// A blocking client socket to 127.0.0.1. Not thread-safe; closed on destruction.
class RawSocket {
 public:
  /// Connects to 127.0.0.1:`port`; `receive_buffer` > 0 shrinks the kernel's receive buffer
  /// first (a peer that does not read then stops the sender sooner). Throws std::runtime_error.
  explicit RawSocket(int port, int receive_buffer = 0);
  ~RawSocket();
  RawSocket(RawSocket&& other) noexcept;
  RawSocket& operator=(RawSocket&& other) noexcept;
  RawSocket(const RawSocket&) = delete;
  RawSocket& operator=(const RawSocket&) = delete;

  /// Sends all of `bytes` unless the peer stops taking them for `patience` or the connection
  /// ends: returns how many bytes went. Paced when the calling thread asked for it.
  std::size_t send(std::string_view bytes,
                   std::chrono::milliseconds patience = std::chrono::milliseconds(2000));
  /// Whatever arrives within `wait` (empty when nothing does or the connection ended).
  std::string receive(std::chrono::milliseconds wait = std::chrono::milliseconds(100));
  /// Reads and drops everything that arrives until `wait` passes without any: returns the bytes.
  std::size_t drain(std::chrono::milliseconds wait = std::chrono::milliseconds(100));
  /// Whether the server closed the connection (reads, and drops what it reads).
  bool closed_by_peer(std::chrono::milliseconds wait = std::chrono::milliseconds(100));
  /// The local port, which names this connection to the server.
  int local_port() const;
  int fd() const { return fd_; }

  /// Sends from the calling thread go at most `bytes_per_second` (0: as fast as the peer takes
  /// them), in pieces of 64 KiB. For attackers that must not turn into a bandwidth test: on a
  /// small machine, moving megabytes over loopback at full speed takes every core for
  /// milliseconds, whoever sends them.
  static void pace_sends_on_this_thread(std::size_t bytes_per_second);

 private:
  int fd_ = -1;
};

}  // namespace sonic::test

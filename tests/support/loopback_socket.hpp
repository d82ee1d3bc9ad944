// Test fixture: a raw TCP socket on an ephemeral loopback port, for peers that are not sonic
// servers (silent, hostile) and for URLs where nothing listens. Needs doctest (REQUIRE).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

namespace sonic::test {

// A TCP socket bound to an ephemeral loopback port, listening when asked; closed on scope exit.
class LoopbackSocket {
 public:
  explicit LoopbackSocket(bool listen) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    if (listen) REQUIRE(::listen(fd_, 4) == 0);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~LoopbackSocket() { ::close(fd_); }
  LoopbackSocket(const LoopbackSocket&) = delete;
  LoopbackSocket& operator=(const LoopbackSocket&) = delete;

  int fd() const { return fd_; }
  std::string url() const { return "grpc://127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_;
  std::uint16_t port_ = 0;
};

// A peer that accepts one connection and reads it, but never answers anything, not even
// pings: only a keepalive notices it. Stops reading and closes on scope exit.
class SilentPeer {
 public:
  SilentPeer() : listener_(true), peer_([this] { run(); }) {}
  ~SilentPeer() {
    stop_ = true;
    peer_.join();
  }
  SilentPeer(const SilentPeer&) = delete;
  SilentPeer& operator=(const SilentPeer&) = delete;

  /// "grpc://127.0.0.1:<port>"; replace the scheme for other transports.
  std::string url() const { return listener_.url(); }

 private:
  void run() {
    int conn = ::accept(listener_.fd(), nullptr, nullptr);
    char sink[4096];
    while (!stop_ && conn >= 0 && ::recv(conn, sink, sizeof sink, MSG_DONTWAIT) != 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (conn >= 0) ::close(conn);
  }

  LoopbackSocket listener_;
  std::atomic<bool> stop_{false};
  std::thread peer_;
};

// A loopback URL with nothing listening: the port was bound, then released.
inline std::string unused_url() { return LoopbackSocket(false).url(); }

}  // namespace sonic::test

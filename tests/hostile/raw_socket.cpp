#include "raw_socket.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace sonic::test {

namespace {
using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point until) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

constexpr std::size_t kPacedPieceBytes = 64 * 1024;
thread_local std::size_t paced_bytes_per_second = 0;
}  // namespace

void RawSocket::pace_sends_on_this_thread(std::size_t bytes_per_second) {
  paced_bytes_per_second = bytes_per_second;
}

RawSocket::RawSocket(int port, int receive_buffer) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
  if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  if (receive_buffer > 0) {
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
  }
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    int error = errno;
    ::close(fd_);
    fd_ = -1;
    throw std::runtime_error("connect to port " + std::to_string(port) + ": " +
                             std::strerror(error));
  }
}

RawSocket::~RawSocket() {
  if (fd_ >= 0) ::close(fd_);
}

RawSocket::RawSocket(RawSocket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

RawSocket& RawSocket::operator=(RawSocket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

std::size_t RawSocket::send(std::string_view bytes, std::chrono::milliseconds patience) {
  std::size_t sent = 0;
  const auto start = Clock::now();
  auto until = start + patience;
  const std::size_t rate = paced_bytes_per_second;
  while (sent < bytes.size()) {
    std::size_t piece = bytes.size() - sent;
    if (rate > 0) {
      piece = std::min(piece, kPacedPieceBytes);
      std::this_thread::sleep_until(start + std::chrono::microseconds(sent * 1000000 / rate));
    }
    ssize_t n = ::send(fd_, bytes.data() + sent, piece, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
      until = Clock::now() + patience;
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) break;
    pollfd p{fd_, POLLOUT, 0};
    int left = remaining_ms(until);
    if (left == 0 || ::poll(&p, 1, left) <= 0) break;
    if (p.revents & (POLLERR | POLLHUP)) break;
  }
  return sent;
}

std::string RawSocket::receive(std::chrono::milliseconds wait) {
  std::string out;
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(wait.count())) <= 0) return out;
  char buffer[65536];
  ssize_t n = ::recv(fd_, buffer, sizeof buffer, MSG_DONTWAIT);
  if (n > 0) out.assign(buffer, static_cast<std::size_t>(n));
  return out;
}

std::size_t RawSocket::drain(std::chrono::milliseconds wait) {
  std::size_t total = 0;
  for (;;) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(wait.count())) <= 0) return total;
    char buffer[65536];
    ssize_t n = ::recv(fd_, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n <= 0) return total;
    total += static_cast<std::size_t>(n);
  }
}

bool RawSocket::closed_by_peer(std::chrono::milliseconds wait) {
  auto until = Clock::now() + wait;
  for (;;) {
    pollfd p{fd_, POLLIN, 0};
    int left = remaining_ms(until);
    if (::poll(&p, 1, left) <= 0) return false;
    char buffer[65536];
    ssize_t n = ::recv(fd_, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n == 0) return true;
    if (n < 0 && errno != EAGAIN && errno != EINTR) return true;  // reset
    if (left == 0) return false;
  }
}

int RawSocket::local_port() const {
  sockaddr_in address{};
  socklen_t length = sizeof address;
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
  return ntohs(address.sin_port);
}

}  // namespace sonic::test

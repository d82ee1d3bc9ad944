// The kernel's floor for a request: a raw TCP ping-pong of BYTES each way over loopback, with no
// protocol, no framing and no threads beyond the two ends, so that a client's figures can be
// read as a ratio to what the socket alone costs. The client end measures its own thread's CPU
// (user + system) per round trip.
//
//   sonic-tcp-floor [--bytes 256] [--round-trips 20000]
//
// Prints one JSON object: throughput (round trips/s), p50_us, p99_us, client_cpu_us.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "timing.hpp"

namespace {

using sonic::bench::Clock;

void send_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n <= 0) throw std::runtime_error("send failed");
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

bool recv_all(int fd, char* data, std::size_t size) {
  while (size > 0) {
    ssize_t n = ::recv(fd, data, size, 0);
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

void no_delay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

double thread_cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_THREAD, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t bytes = 256;
  int round_trips = 20000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--bytes") {
      bytes = std::strtoull(argv[i + 1], nullptr, 10);
    } else if (flag == "--round-trips") {
      round_trips = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr, "usage: sonic-tcp-floor [--bytes N] [--round-trips N]\n");
      return 2;
    }
  }
  if (bytes == 0 || round_trips <= 0) return 2;

  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (::bind(listener, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      ::listen(listener, 1) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    std::perror("sonic-tcp-floor: listen on 127.0.0.1");
    return 1;
  }
  std::thread echo([&] {
    int peer = ::accept(listener, nullptr, nullptr);
    no_delay(peer);
    std::vector<char> buffer(bytes);
    while (recv_all(peer, buffer.data(), bytes)) send_all(peer, buffer.data(), bytes);
    ::close(peer);
  });

  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), length) != 0) {
    std::perror("sonic-tcp-floor: connect");
    return 1;
  }
  no_delay(fd);
  std::vector<char> message(bytes, 'x');
  std::vector<double> latencies;
  latencies.reserve(static_cast<std::size_t>(round_trips));
  for (int i = 0; i < round_trips / 10; ++i) {  // warm-up
    send_all(fd, message.data(), bytes);
    recv_all(fd, message.data(), bytes);
  }
  const double cpu = thread_cpu_seconds();
  const auto begun = Clock::now();
  for (int i = 0; i < round_trips; ++i) {
    const auto start = Clock::now();
    send_all(fd, message.data(), bytes);
    if (!recv_all(fd, message.data(), bytes)) return 1;
    latencies.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - begun).count();
  const double cpu_us = (thread_cpu_seconds() - cpu) / round_trips * 1e6;
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
  echo.join();
  ::close(listener);
  std::printf("{\"throughput\":%.1f,\"p50_us\":%.2f,\"p99_us\":%.2f,\"client_cpu_us\":%.3f}\n",
              round_trips / seconds, sonic::bench::percentile(latencies, 0.5),
              sonic::bench::percentile(latencies, 0.99), cpu_us);
  return 0;
}

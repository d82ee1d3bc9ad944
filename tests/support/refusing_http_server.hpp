// Test support: an HTTP/1.1 server on 127.0.0.1 that refuses every request the way an overloaded
// server or its proxy does, with a status (429, 503) and a Retry-After, and notes when each
// request came. Keep-alive connections, one thread each. Needs doctest (REQUIRE).
#pragma once

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "loopback_socket.hpp"

namespace sonic::test {

class RefusingHttpServer {
 public:
  /// Answers every request with `status` and, unless empty, `Retry-After: retry_after`.
  RefusingHttpServer(int status, std::string retry_after)
      : status_(status), retry_after_(std::move(retry_after)), listener_(true) {
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~RefusingHttpServer() {
    stop_ = true;
    acceptor_.join();
    for (auto& connection : connections_) connection.join();
  }
  RefusingHttpServer(const RefusingHttpServer&) = delete;
  RefusingHttpServer& operator=(const RefusingHttpServer&) = delete;

  /// "http://127.0.0.1:<port>".
  std::string url() const {
    const std::string grpc = listener_.url();
    return "http" + grpc.substr(grpc.find(':'));
  }
  /// When each request arrived (its head read whole), in order.
  std::vector<std::chrono::steady_clock::time_point> request_times() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return times_;
  }
  std::size_t requests() const { return request_times().size(); }

 private:
  // Waits up to 20 ms for `fd` to be readable; false when it is not (yet).
  static bool readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 20) > 0;
  }

  void accept_loop() {
    while (!stop_) {
      if (!readable(listener_.fd())) continue;
      const int fd = ::accept(listener_.fd(), nullptr, nullptr);
      if (fd < 0) continue;
      connections_.emplace_back([this, fd] { serve(fd); });
    }
  }

  // Reads requests (a head, then Content-Length bytes of body) and refuses each.
  void serve(int fd) {
    std::string in;
    char chunk[16384];
    while (!stop_) {
      const std::size_t head_end = in.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        std::size_t body = 0;
        const std::size_t at = lower(in.substr(0, head_end)).find("content-length:");
        if (at != std::string::npos) body = std::strtoull(in.c_str() + at + 15, nullptr, 10);
        if (in.size() >= head_end + 4 + body) {
          in.erase(0, head_end + 4 + body);
          {
            std::lock_guard<std::mutex> lock(mutex_);
            times_.push_back(std::chrono::steady_clock::now());
          }
          const std::string reply = answer();
          if (::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL) < 0) break;
          continue;
        }
      }
      if (!readable(fd)) continue;
      const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) break;
      in.append(chunk, static_cast<std::size_t>(n));
    }
    ::close(fd);
  }

  std::string answer() const {
    const std::string body = "{\"error\":\"the server is overloaded\"}";
    std::string reply = "HTTP/1.1 " + std::to_string(status_) + " Refused\r\n";
    if (!retry_after_.empty()) reply += "Retry-After: " + retry_after_ + "\r\n";
    reply += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
             "\r\n\r\n" + body;
    return reply;
  }

  static std::string lower(std::string text) {
    for (char& c : text) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    return text;
  }

  const int status_;
  const std::string retry_after_;
  LoopbackSocket listener_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::vector<std::chrono::steady_clock::time_point> times_;
  std::vector<std::thread> connections_;  // touched by the acceptor, then the destructor
  std::thread acceptor_;
};

}  // namespace sonic::test

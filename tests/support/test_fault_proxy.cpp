// FaultProxy against a small echo server, with plain POSIX client sockets on 127.0.0.1: each
// fault as seen by a client, and the proxy's counters. Every wait is bounded.
// Over 500 lines: one case per fault, all against the same echo server.
#include "fault_proxy.hpp"

#include "eventually.hpp"

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace sonic::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

/// Owns a file descriptor.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = other.release();
    }
    return *this;
  }
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

sockaddr_in loopback(std::uint16_t port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  ::inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  return address;
}

/// A listening socket on 127.0.0.1:port (0: ephemeral).
Fd listen_on(std::uint16_t port, bool reuse_address = false) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) throw std::runtime_error("socket: " + std::string(std::strerror(errno)));
  const int on = 1;
  if (reuse_address) ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  const sockaddr_in address = loopback(port);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(fd.get(), 64) != 0) {
    throw std::runtime_error("bind/listen: " + std::string(std::strerror(errno)));
  }
  return fd;
}

std::uint16_t local_port(int fd) {
  sockaddr_in address{};
  socklen_t length = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  return ntohs(address.sin_port);
}

/// Connects to 127.0.0.1:port; on failure returns an invalid Fd and sets *error to errno.
Fd connect_to(std::uint16_t port, int* error = nullptr) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const sockaddr_in address = loopback(port);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    if (error) *error = errno;
    return Fd();
  }
  const int on = 1;
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  if (error) *error = 0;
  return fd;
}

void send_all(int fd, const std::string& data) {
  std::size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("send: " + std::string(std::strerror(errno)));
    sent += static_cast<std::size_t>(n);
  }
}

struct ReadResult {
  std::string data;
  int error = 0;           // errno of the read that failed
  bool eof = false;        // the peer closed
  bool timed_out = false;  // `want` bytes did not come in time
};

/// Reads until `want` bytes, EOF, an error or the timeout, whichever comes first.
ReadResult read_for(int fd, std::size_t want, std::chrono::milliseconds timeout) {
  ReadResult result;
  const auto deadline = Clock::now() + timeout;
  char buffer[64 * 1024];
  while (result.data.size() < want) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    pollfd p{fd, POLLIN, 0};
    const int ready = left.count() > 0 ? ::poll(&p, 1, static_cast<int>(left.count())) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      result.timed_out = true;
      break;
    }
    const ssize_t n = ::recv(fd, buffer, std::min(sizeof buffer, want - result.data.size()), 0);
    if (n > 0) {
      result.data.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0) {
      result.eof = true;
      break;
    } else if (errno != EINTR) {
      result.error = errno;
      break;
    }
  }
  return result;
}

/// Sends `data` and reads as many bytes back.
std::string round_trip(int fd, const std::string& data) {
  send_all(fd, data);
  return read_for(fd, data.size(), 1s).data;
}

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::string pattern(std::size_t size) {
  std::string data(size, '\0');
  for (std::size_t i = 0; i < size; ++i) data[i] = static_cast<char>('a' + (i * 7 + i / 251) % 26);
  return data;
}

/// Echo server on 127.0.0.1:<ephemeral>: one poll() thread, non-blocking sends, bounded buffers;
/// closes a connection once the client closed and everything was echoed. push() sends bytes to
/// every connection unprompted (server-to-client traffic alone).
class EchoServer {
 public:
  EchoServer() : listener_(listen_on(0)) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2");
    wake_read_ = Fd(fds[0]);
    wake_write_ = Fd(fds[1]);
    port_ = local_port(listener_.get());
    thread_ = std::thread([this] { loop(); });
  }
  ~EchoServer() {
    stop_ = true;
    wake();
    thread_.join();
  }

  std::uint16_t port() const { return port_; }
  std::size_t accepted() const { return accepted_; }

  void push(const std::string& data) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      pushed_ += data;
    }
    wake();
  }

 private:
  struct Connection {
    Fd fd;
    std::string out;
    bool eof = false;
  };
  static constexpr std::size_t kMaxOut = 4 << 20;

  void wake() {
    const char byte = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_write_.get(), &byte, 1);
  }

  void loop() {
    std::vector<Connection> connections;
    std::vector<pollfd> fds;
    while (!stop_) {
      fds.assign({{wake_read_.get(), POLLIN, 0}, {listener_.get(), POLLIN, 0}});
      for (const Connection& c : connections) {
        short events = 0;
        if (!c.eof && c.out.size() < kMaxOut) events |= POLLIN;
        if (!c.out.empty()) events |= POLLOUT;
        fds.push_back({c.fd.get(), events, 0});
      }
      if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
      if (fds[0].revents & POLLIN) {
        char drain[64];
        [[maybe_unused]] const ssize_t n = ::read(wake_read_.get(), drain, sizeof drain);
        std::lock_guard<std::mutex> lock(mutex_);
        for (Connection& c : connections) c.out += pushed_;
        pushed_.clear();
      }
      const std::size_t polled = connections.size();
      if (fds[1].revents & POLLIN) {
        Fd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
        if (fd.get() >= 0) {
          connections.push_back({std::move(fd), {}, false});
          ++accepted_;
        }
      }
      for (std::size_t i = 0; i < polled; ++i) {
        Connection& c = connections[i];
        const short revents = fds[i + 2].revents;
        bool drop = (revents & POLLERR) != 0;
        if (!drop && (revents & (POLLIN | POLLHUP)) && !c.eof && c.out.size() < kMaxOut) {
          char buffer[64 * 1024];
          const ssize_t n = ::recv(c.fd.get(), buffer, sizeof buffer, MSG_DONTWAIT);
          if (n > 0) c.out.append(buffer, static_cast<std::size_t>(n));
          if (n == 0) c.eof = true;
          if (n < 0 && errno != EAGAIN && errno != EINTR) drop = true;
        }
        if (!drop && !c.out.empty()) {
          const ssize_t n =
              ::send(c.fd.get(), c.out.data(), c.out.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
          if (n > 0) c.out.erase(0, static_cast<std::size_t>(n));
          if (n < 0 && errno != EAGAIN && errno != EINTR) drop = true;
        }
        if (drop || (c.eof && c.out.empty())) c.fd.reset();
      }
      std::vector<Connection> open;
      for (Connection& c : connections) {
        if (c.fd.get() >= 0) open.push_back(std::move(c));
      }
      connections.swap(open);
    }
  }

  Fd listener_;
  Fd wake_read_;
  Fd wake_write_;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> accepted_{0};
  std::mutex mutex_;
  std::string pushed_;
  std::thread thread_;
};

TEST_CASE("pass forwards bytes both ways and counts connections and bytes") {
  EchoServer echo;
  FaultProxy proxy(echo.port());
  CHECK(proxy.port() != 0);
  CHECK(proxy.port() != echo.port());
  CHECK(proxy.url() == "grpc://127.0.0.1:" + std::to_string(proxy.port()));
  CHECK(proxy.fault() == Fault::Pass);

  Fd client = connect_to(proxy.port());
  REQUIRE(client.get() >= 0);
  CHECK(round_trip(client.get(), "hello") == "hello");
  CHECK(proxy.connections_accepted() == 1);
  CHECK(echo.accepted() == 1);
  CHECK(eventually([&] { return proxy.bytes_to_client() == 5; }, 1s));
  CHECK(proxy.bytes_to_server() == 5);

  // Server-to-client bytes nobody asked for.
  echo.push("news");
  CHECK(read_for(client.get(), 4, 1s).data == "news");

  // 3 MiB in both directions at once (a writer thread; the proxy buffers a bounded amount).
  const std::string big = pattern(3 << 20);
  std::thread writer([&] { send_all(client.get(), big); });
  const ReadResult back = read_for(client.get(), big.size(), 2s);
  writer.join();
  CHECK(back.data.size() == big.size());
  CHECK(back.data == big);
  CHECK(eventually([&] { return proxy.bytes_to_client() == 5 + 4 + big.size(); }, 1s));
  CHECK(proxy.bytes_to_server() == 5 + big.size());

  // A second connection, then both closed: the proxy closes its side of both.
  Fd second = connect_to(proxy.port());
  CHECK(round_trip(second.get(), "2") == "2");
  CHECK(proxy.connections_accepted() == 2);
  CHECK(proxy.connections_open() == 2);
  client.reset();
  second.reset();
  CHECK(eventually([&] { return proxy.connections_open() == 0; }, 1s));
  CHECK(proxy.connections_reset() == 0);
}

TEST_CASE("delay holds each chunk for at least the delay, both ways, in order") {
  EchoServer echo;
  FaultProxy proxy(echo.port());
  Fd client = connect_to(proxy.port());
  REQUIRE(round_trip(client.get(), "warm") == "warm");

  proxy.delay(100ms);
  CHECK(proxy.fault() == Fault::Delay);
  auto start = Clock::now();
  CHECK(round_trip(client.get(), "a") == "a");
  CHECK(ms_since(start) >= 200.0);  // 100 ms to the server, 100 ms back

  // Chunks sent apart stay in order and each keeps its own delay: the last one comes back
  // about 200 ms after it was sent, not 200 ms after the first one.
  start = Clock::now();
  for (const char* part : {"b", "c", "d"}) {
    send_all(client.get(), part);
    std::this_thread::sleep_for(30ms);
  }
  const ReadResult ordered = read_for(client.get(), 3, 1s);
  CHECK(ordered.data == "bcd");
  CHECK(ms_since(start) >= 260.0);
  CHECK(ms_since(start) < 800.0);

  proxy.pass();
  start = Clock::now();
  CHECK(round_trip(client.get(), "e") == "e");
  CHECK(ms_since(start) < 100.0);
}

TEST_CASE("stall holds data both ways on old and new connections; pass releases it in order") {
  EchoServer echo;
  FaultProxy proxy(echo.port());
  Fd first = connect_to(proxy.port());
  REQUIRE(round_trip(first.get(), "1") == "1");

  proxy.stall();
  CHECK(proxy.fault() == Fault::Stall);
  send_all(first.get(), "ping");
  Fd second = connect_to(proxy.port());  // accepted, but nothing moves
  REQUIRE(second.get() >= 0);
  send_all(second.get(), "x");
  const ReadResult held = read_for(first.get(), 1, 200ms);
  CHECK(held.timed_out);
  CHECK(held.data.empty());
  CHECK(read_for(second.get(), 1, 20ms).timed_out);
  CHECK(proxy.connections_accepted() == 2);
  CHECK(proxy.bytes_to_server() == 1);

  proxy.pass();  // held data goes out, in order
  CHECK(read_for(first.get(), 4, 1s).data == "ping");
  CHECK(read_for(second.get(), 1, 1s).data == "x");

  // Server-to-client alone: the echo server's bytes wait too.
  proxy.stall();
  echo.push("srv");
  CHECK(read_for(first.get(), 1, 200ms).timed_out);
  proxy.pass();
  CHECK(read_for(first.get(), 3, 1s).data == "srv");
  CHECK(read_for(second.get(), 3, 1s).data == "srv");
}

TEST_CASE("stall pushes back on the sender instead of buffering without bound") {
  EchoServer echo;
  FaultProxy proxy(echo.port());
  Fd client = connect_to(proxy.port());
  REQUIRE(round_trip(client.get(), "1") == "1");
  proxy.stall();

  // Send without blocking until the socket stays full for 100 ms.
  const std::string block = pattern(64 * 1024);
  std::size_t sent = 0;
  for (;;) {
    const ssize_t n = ::send(client.get(), block.data(), block.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
      REQUIRE(sent < (64u << 20));  // bounded: kernel buffers plus 1 MiB in the proxy
      continue;
    }
    REQUIRE((errno == EAGAIN || errno == EWOULDBLOCK));
    pollfd p{client.get(), POLLOUT, 0};
    if (::poll(&p, 1, 100) == 0) break;
  }
  CHECK(proxy.bytes_to_server() == 1);

  proxy.pass();
  const ReadResult back = read_for(client.get(), sent, 2s);
  CHECK(back.data.size() == sent);
  CHECK(eventually([&] { return proxy.bytes_to_server() == 1 + sent; }, 1s));
}

TEST_CASE("reset_all resets current connections; later ones pass") {
  EchoServer echo;
  FaultProxy proxy(echo.port());
  Fd first = connect_to(proxy.port());
  Fd second = connect_to(proxy.port());
  REQUIRE(round_trip(first.get(), "a") == "a");
  REQUIRE(round_trip(second.get(), "b") == "b");

  proxy.stall();
  proxy.reset_all();
  CHECK(proxy.fault() == Fault::Pass);
  CHECK(proxy.connections_reset() == 2);
  CHECK(proxy.connections_open() == 0);
  for (int fd : {first.get(), second.get()}) {
    const ReadResult r = read_for(fd, 1, 1s);
    CHECK(r.data.empty());
    CHECK(r.error == ECONNRESET);
  }

  Fd later = connect_to(proxy.port());
  CHECK(round_trip(later.get(), "c") == "c");
  CHECK(proxy.connections_reset() == 2);
}

TEST_CASE("cut_after delivers exactly n response bytes, then resets that connection") {
  EchoServer echo;
  FaultProxy proxy(echo.port());
  Fd client = connect_to(proxy.port());
  REQUIRE(round_trip(client.get(), "warm") == "warm");

  proxy.cut_after(1000);
  CHECK(proxy.fault() == Fault::CutAfter);
  const std::string request = pattern(10000);
  send_all(client.get(), request);
  const ReadResult cut = read_for(client.get(), request.size(), 1s);
  CHECK(cut.data.size() == 1000);
  CHECK(cut.data == request.substr(0, 1000));
  CHECK(cut.error == ECONNRESET);
  CHECK(proxy.connections_reset() == 1);
  CHECK(proxy.fault() == Fault::Pass);  // one-shot
  CHECK(proxy.bytes_to_client() == 4 + 1000);

  Fd later = connect_to(proxy.port());
  CHECK(round_trip(later.get(), request) == request);
}

TEST_CASE("cut_after counts bytes over all connections and cuts where the budget ends") {
  EchoServer echo;
  FaultProxy proxy(echo.port());
  Fd first = connect_to(proxy.port());
  Fd second = connect_to(proxy.port());
  REQUIRE(round_trip(first.get(), "0") == "0");
  REQUIRE(round_trip(second.get(), "0") == "0");

  proxy.cut_after(3);
  CHECK(round_trip(first.get(), "ab") == "ab");  // 1 byte left
  send_all(second.get(), "cdef");
  const ReadResult cut = read_for(second.get(), 4, 1s);
  CHECK(cut.data == "c");
  CHECK(cut.error == ECONNRESET);
  CHECK(round_trip(first.get(), "gh") == "gh");  // untouched, and back to Pass

  // cut_after(0): the next connection with a response byte is reset before sending it.
  proxy.cut_after(0);
  send_all(first.get(), "ij");
  const ReadResult none = read_for(first.get(), 2, 1s);
  CHECK(none.data.empty());
  CHECK(none.error == ECONNRESET);
  CHECK(proxy.connections_reset() == 2);
}

TEST_CASE("refuse closes the listener; refuse(false) reopens the same port") {
  EchoServer echo;
  FaultProxy proxy(echo.port());
  const std::uint16_t port = proxy.port();
  Fd before = connect_to(port);
  REQUIRE(round_trip(before.get(), "a") == "a");

  proxy.refuse(true);
  CHECK(proxy.refusing());
  int error = 0;
  CHECK(connect_to(port, &error).get() < 0);
  CHECK(error == ECONNREFUSED);
  CHECK(round_trip(before.get(), "b") == "b");  // established connections carry on
  proxy.refuse(true);                           // idempotent

  proxy.refuse(false);
  CHECK_FALSE(proxy.refusing());
  CHECK(proxy.port() == port);
  Fd after = connect_to(port, &error);
  REQUIRE(after.get() >= 0);
  CHECK(round_trip(after.get(), "c") == "c");
  CHECK(proxy.connections_accepted() == 2);
}

TEST_CASE("refuse(false) throws when the port was taken meanwhile, and may be retried") {
  EchoServer echo;
  FaultProxy proxy(echo.port());
  proxy.refuse(true);
  {
    Fd taker = listen_on(proxy.port(), /*reuse_address=*/true);
    CHECK_THROWS_AS(proxy.refuse(false), std::runtime_error);
    CHECK(proxy.refusing());
  }
  proxy.refuse(false);
  Fd client = connect_to(proxy.port());
  REQUIRE(client.get() >= 0);
  CHECK(round_trip(client.get(), "ok") == "ok");
}

TEST_CASE("set_target sends later connections to the new target") {
  EchoServer a;
  EchoServer b;
  FaultProxy proxy(a.port());
  Fd to_a = connect_to(proxy.port());
  REQUIRE(round_trip(to_a.get(), "1") == "1");

  proxy.set_target(b.port());
  Fd to_b = connect_to(proxy.port());
  CHECK(round_trip(to_b.get(), "2") == "2");
  CHECK(round_trip(to_a.get(), "3") == "3");
  CHECK(a.accepted() == 1);
  CHECK(b.accepted() == 1);
}

TEST_CASE("a connection whose target is down is reset") {
  std::uint16_t dead_port = 0;
  {
    Fd unused = listen_on(0);
    dead_port = local_port(unused.get());
  }
  FaultProxy proxy(dead_port);
  Fd client = connect_to(proxy.port());
  REQUIRE(client.get() >= 0);  // the proxy accepts, then fails to reach the target
  const ReadResult r = read_for(client.get(), 1, 1s);
  CHECK_FALSE(r.timed_out);
  CHECK(r.error == ECONNRESET);
  CHECK(eventually([&] { return proxy.connections_open() == 0; }, 1s));
}

TEST_CASE("the destructor closes stalled connections promptly") {
  EchoServer echo;
  auto proxy = std::make_unique<FaultProxy>(echo.port());
  Fd client = connect_to(proxy->port());
  REQUIRE(round_trip(client.get(), "1") == "1");
  proxy->stall();
  send_all(client.get(), pattern(100 * 1024));
  proxy->delay(10s);  // and a timer pending

  const auto start = Clock::now();
  proxy.reset();
  CHECK(ms_since(start) < 500.0);
  const ReadResult r = read_for(client.get(), 1, 1s);
  CHECK_FALSE(r.timed_out);
  CHECK(r.data.empty());
}

}  // namespace
}  // namespace sonic::test

// libFuzzer target: the client's HTTP/2 receive path, fed by a hostile server. The target
// listens on 127.0.0.1 itself (plain POSIX sockets), points one sonic::Client at that port,
// starts an infer_future of `simple`, accepts the connection, reads the client's preface and
// request, writes the fuzz input as the server's bytes, half-closes, and requires that the call
// completes (a result or a sonic::Error) within 2 s. Anything else — a crash, a sanitizer
// report, another exception, a hang — is a bug in sonic.
//
// Input: byte 0 holds flags (bit 0: send a valid empty server SETTINGS frame before reading the
// request); the rest is written to the socket in one go, as everything the server says (a
// server starts with its own SETTINGS frame).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sonic/sonic.hpp>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace {

using SteadyClock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::uint8_t kServerSettings[] = {0, 0, 0, 4, 0, 0, 0, 0, 0};
constexpr std::size_t kPrefaceBytes = 24;  // "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
constexpr auto kAcceptWait = milliseconds(1000);
constexpr auto kRequestWait = milliseconds(500);
constexpr auto kWriteWait = milliseconds(500);
constexpr auto kCompletionWait = milliseconds(2000);
constexpr int kAttempts = 3;

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "fuzz_h2_client: %s (errno %d: %s)\n", what, errno, std::strerror(errno));
  std::abort();
}

// The listener, and the Client pointed at it: one of each per process. Each input gets a new
// connection: the previous one was closed, and the client opens another on the next call.
struct Harness {
  Harness() {
    listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listener < 0) die("socket");
    int one = 1;
    ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    if (::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) die("bind");
    if (::listen(listener, 16) != 0) die("listen");
    socklen_t length = sizeof address;
    if (::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      die("getsockname");
    }
    sonic::ClientOptions options;
    options.endpoints = {"grpc://127.0.0.1:" + std::to_string(ntohs(address.sin_port))};
    options.validate_inputs = false;
    options.default_timeout = milliseconds(200);
    options.connect_timeout = milliseconds(200);
    // One attempt, one endpoint that is never ejected: each call is one connection's fate.
    options.retry.max_attempts = 1;
    options.breaker.failures_to_eject = std::numeric_limits<int>::max();
    client = std::make_unique<sonic::Client>(std::move(options));
  }

  int listener = -1;
  std::unique_ptr<sonic::Client> client;
};

Harness& harness() {
  static Harness instance;
  return instance;
}

sonic::InferRequest simple_request() {
  return sonic::InferRequest("simple")
      .input("INPUT0", sonic::Tensor::from_vector(std::vector<std::int32_t>(16, 1), {1, 16}))
      .input("INPUT1", sonic::Tensor::from_vector(std::vector<std::int32_t>(16, 2), {1, 16}));
}

bool expired(SteadyClock::time_point deadline) { return SteadyClock::now() >= deadline; }

bool ready(std::future<sonic::InferResult>& future, std::chrono::microseconds wait) {
  return future.wait_for(wait) == std::future_status::ready;
}

// Waits (bounded) for the client to connect; -1 when the call completed first, which happens
// when it went to the previous connection before the client noticed that it was closed.
int accept_connection(int listener, std::future<sonic::InferResult>& future) {
  auto deadline = SteadyClock::now() + kAcceptWait;
  while (!expired(deadline)) {
    pollfd p{listener, POLLIN, 0};
    if (::poll(&p, 1, 1) > 0) {
      int fd = ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd >= 0) return fd;
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) die("accept");
    }
    if (ready(future, std::chrono::microseconds(0))) return -1;
  }
  return -1;
}

// Reads and discards what the client has sent; false once it closed or failed.
bool discard_input(int fd, std::vector<std::uint8_t>* keep = nullptr) {
  std::uint8_t buffer[16384];
  for (;;) {
    ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n > 0) {
      if (keep && keep->size() < (1u << 20)) keep->insert(keep->end(), buffer, buffer + n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
    return false;
  }
}

// Reads the client's preface and frames until its request ended (a frame with END_STREAM) or
// the bound passed.
void read_request(int fd) {
  std::vector<std::uint8_t> seen;
  auto deadline = SteadyClock::now() + kRequestWait;
  std::size_t at = kPrefaceBytes;
  while (!expired(deadline)) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 1) <= 0) continue;
    bool open = discard_input(fd, &seen);
    while (seen.size() >= at + 9) {
      std::size_t length = (std::size_t{seen[at]} << 16) | (std::size_t{seen[at + 1]} << 8) |
                           std::size_t{seen[at + 2]};
      std::uint8_t type = seen[at + 3], flags = seen[at + 4];
      if ((type == 0 || type == 1) && (flags & 1)) return;  // DATA or HEADERS, END_STREAM
      at += 9 + length;
    }
    if (!open) return;
  }
}

// Writes everything (bounded), reading meanwhile so that neither side can stall the other.
void write_all(int fd, const std::uint8_t* data, std::size_t size) {
  auto deadline = SteadyClock::now() + kWriteWait;
  while (size > 0 && !expired(deadline)) {
    ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n > 0) {
      data += n;
      size -= static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return;  // reset
    if (!discard_input(fd)) return;
    pollfd p{fd, POLLOUT, 0};
    ::poll(&p, 1, 1);
  }
}

// Reads every output the way a caller would.
std::size_t touch(const sonic::InferResult& result) {
  std::size_t sum = result.model_name().size() + result.request_id().size();
  for (const auto& output : result.outputs()) {
    sum += output.name.size() + output.tensor.byte_size();
    if (!output.tensor.check()) continue;
    if (output.tensor.dtype() == sonic::DataType::Bytes) {
      for (std::string_view item : output.tensor.string_views()) sum += item.size();
    } else if (output.tensor.byte_size() > 0) {
      sum += output.tensor.data()[output.tensor.byte_size() - 1];
    }
  }
  return sum;
}

// The outcome must be a result or a sonic::Error; any other exception escapes to libFuzzer.
// SONIC_FUZZ_VERBOSE=1 prints it (to see what a seed does).
std::size_t outcome(std::future<sonic::InferResult>& future) {
  static const bool verbose = std::getenv("SONIC_FUZZ_VERBOSE") != nullptr;
  try {
    sonic::InferResult result = future.get();
    if (verbose)
      std::fprintf(stderr, "outcome: a result with %zu outputs\n", result.outputs().size());
    return touch(result);
  } catch (const sonic::Error& error) {
    if (verbose) std::fprintf(stderr, "outcome: %s\n", error.what());
    return static_cast<std::size_t>(error.code());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  Harness& h = harness();
  std::uint8_t flags = data[0];
  volatile std::size_t sink = 0;

  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    auto future = h.client->infer_future(simple_request());
    int fd = accept_connection(h.listener, future);
    if (fd < 0) {
      if (!ready(future, kCompletionWait)) die("the call neither connected nor completed");
      sink = sink + outcome(future);  // a stale connection: try again on a new one
      continue;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (flags & 1) write_all(fd, kServerSettings, sizeof kServerSettings);
    read_request(fd);
    write_all(fd, data + 1, size - 1);
    ::shutdown(fd, SHUT_WR);

    // Whatever the bytes were, the server has gone quiet: the call must end, by its response,
    // by the connection's end or by its 200 ms deadline.
    auto deadline = SteadyClock::now() + kCompletionWait;
    while (!ready(future, std::chrono::microseconds(500))) {
      discard_input(fd);
      if (expired(deadline)) die("hang: the call did not complete within 2 s");
    }
    ::close(fd);
    sink = sink + outcome(future);
    return 0;
  }
  die("the client did not connect in 3 attempts");
}

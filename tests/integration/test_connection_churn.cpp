// A server keeps nothing of connections that ended: 10,000 clients that connect and leave (as
// reconnecting jobs do, over days) cost a real sonic-server no memory once they are gone.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "child_server.hpp"
#include "eventually.hpp"
#include "sanitizers.hpp"

using namespace sonic::test;

namespace {

// Sanitizers keep freed memory in quarantine and add shadow memory: bounds scale with them.
#if defined(SONIC_TEST_TSAN)
constexpr long kSlack = 8;
#else
constexpr long kSlack = 1;
#endif

long resident_kib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  long value = 0;
  while (status >> key) {
    if (key == "VmRSS:") {
      status >> value;
      return value;
    }
    status.ignore(256, '\n');
  }
  return -1;
}

// Connects to 127.0.0.1:port and closes at once, `n` times.
void churn(int port, int n) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < n; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    ::close(fd);
  }
}

}  // namespace

TEST_CASE("10,000 connections opened and closed leave the server's memory where it was") {
#if defined(SONIC_TEST_ASAN)
  // Freed memory would sit in ASan's quarantine (256 MiB by default) and look held.
  std::string asan = std::getenv("ASAN_OPTIONS") ? std::getenv("ASAN_OPTIONS") : "";
  ::setenv("ASAN_OPTIONS",
           (asan + ":quarantine_size_mb=4:thread_local_quarantine_size_kb=64").c_str(), 1);
#endif
  ChildServer server({SONIC_SERVER_BINARY, "--port", "0", "--tcp-port", "0"},
                     "sonic-server listening on 127.0.0.1:");
  const int tcp_port = server.next_port("sonic-server tcp listening on 127.0.0.1:");
  for (int port : {server.port(), tcp_port}) {
    CAPTURE(port);
    churn(port, 500);  // warm up: thread stacks, allocator arenas
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const long before = resident_kib(server.pid());
    churn(port, 10000);
    // The server notices each close as its read ends; give it a moment for the last ones.
    long growth = 0;
    eventually(
        [&] {
          growth = resident_kib(server.pid()) - before;
          return growth < 16 * 1024 * kSlack;
        },
        std::chrono::milliseconds(3000));
    MESSAGE("server resident memory after 10,000 more connections: +" << growth << " KiB");
    CHECK(growth < 16 * 1024 * kSlack);  // 10,000 connections of 256 KiB buffers held: 2.5 GiB
  }
}

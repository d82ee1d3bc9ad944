// Blocking calls on connections their threads drive (ClientOptions::drive_blocking_calls, the
// default): each thread's calls on a connection of its own, answered right over grpc:// and
// tcp://; deadlines kept while only the waiting thread runs the connection; a server killed
// between two calls met on a new connection; and no connection left once thread and client end.
#include <dirent.h>
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "child_server.hpp"
#include "eventually.hpp"
#include "loopback_server.hpp"
#include "loopback_socket.hpp"

using namespace sonic;
using namespace sonic::test;
using namespace std::chrono_literals;

namespace {

// This process's sockets: the in-process server's and the client's.
std::size_t open_sockets() {
  std::size_t n = 0;
  DIR* fds = ::opendir("/proc/self/fd");
  REQUIRE(fds != nullptr);
  while (dirent* entry = ::readdir(fds)) {
    char target[64];
    const std::string path = std::string("/proc/self/fd/") + entry->d_name;
    const auto length = ::readlink(path.c_str(), target, sizeof target - 1);
    if (length > 0 &&
        std::string(target, static_cast<std::size_t>(length)).rfind("socket:", 0) == 0) {
      ++n;
    }
  }
  ::closedir(fds);
  return n;
}

bool answers(const InferResult& r, std::int32_t a, std::int32_t b) {
  return r.output("OUTPUT0").as<std::int32_t>()[0] == a + b &&
         r.output("OUTPUT1").as<std::int32_t>()[0] == a - b;
}

ServerOptions with_tcp() {
  ServerOptions options;
  options.tcp_port = 0;
  return options;
}

// No call but the blocking ones: metadata would open the shared connection.
ClientOptions blocking_only() {
  ClientOptions options;
  options.validate_inputs = false;
  return options;
}

}  // namespace

TEST_CASE("blocking calls of four threads run on a connection each, answered right, closed after") {
  LoopbackServer server(with_tcp());
  for (const std::string& url : {server.url(), server.tcp_url()}) {
    CAPTURE(url);
    const std::size_t before = open_sockets();
    std::optional<Client> client;
    client.emplace(url, blocking_only());
    std::vector<std::thread> threads;
    std::atomic<int> right{0};
    std::atomic<int> lanes_open{0};
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        right += answers(client->infer(simple_request(t, 0)), t, 0);
        // A thread's connection goes once it ended and another thread opens one (the client
        // keeps no lane of an ended thread); on a loaded machine one thread could end before
        // another started. All four lanes are open before any thread ends.
        ++lanes_open;
        while (lanes_open < 4) std::this_thread::yield();
        for (int i = 1; i < 100; ++i) right += answers(client->infer(simple_request(t, i)), t, i);
      });
    }
    for (auto& thread : threads) thread.join();
    CHECK(right == 400);
    // The threads ended after each opened its lane; the connections (client and server ends)
    // stay with the client until it ends, or until a thread opens a new lane.
    CHECK(open_sockets() - before == 8);
    client.reset();
    CHECK(eventually([&] { return open_sockets() == before; }));
  }
}

TEST_CASE("a blocking call's deadline holds while only its thread runs the connection") {
  for (const std::string scheme : {"grpc", "tcp"}) {
    CAPTURE(scheme);
    SilentPeer peer;  // accepts, reads, never answers
    auto options = blocking_only();
    options.retry.max_attempts = 1;
    Client client(scheme + peer.url().substr(peer.url().find(':')), options);
    const auto start = std::chrono::steady_clock::now();
    try {
      client.infer(simple_request(1, 2).timeout(200ms));
      FAIL("a silent peer answered");
    } catch (const Error& e) {
      CHECK(e.code() == StatusCode::DeadlineExceeded);
    }
    const double elapsed = ms_since(start);
    CHECK(elapsed >= 199);
    CHECK(elapsed < 300);
  }
}

TEST_CASE("a server killed between two blocking calls: the second goes on a new connection") {
  // One attempt only: a call put on the old connection, whose end sits unread in its socket
  // while no one runs it, would fail. The thread hears of the end before it sends.
  auto options = blocking_only();
  options.retry.max_attempts = 1;
  auto start = [](int port, int tcp_port) {
    return std::make_unique<ChildServer>(
        std::vector<std::string>{SONIC_SERVER_BINARY, "--host", "127.0.0.1", "--port",
                                 std::to_string(port), "--tcp-port", std::to_string(tcp_port),
                                 "--allow-metrics", "false", "--allow-http", "false"},
        "sonic-server listening on 127.0.0.1:");
  };
  auto server = start(0, 0);
  const int port = server->port();
  const int tcp_port = server->next_port("sonic-server tcp listening on 127.0.0.1:");
  Client grpc("grpc://127.0.0.1:" + std::to_string(port), options);
  Client tcp("tcp://127.0.0.1:" + std::to_string(tcp_port), options);
  CHECK(answers(grpc.infer(simple_request(1, 2)), 1, 2));
  CHECK(answers(tcp.infer(simple_request(3, 4)), 3, 4));
  server->kill_now(SIGKILL);  // the kernel closes its connections: no GOAWAY
  server = start(port, tcp_port);
  server->next_port("sonic-server tcp listening on 127.0.0.1:");
  CHECK(answers(grpc.infer(simple_request(5, 6)), 5, 6));
  CHECK(answers(tcp.infer(simple_request(7, 8)), 7, 8));
}

TEST_CASE("drive_blocking_calls off: blocking calls share the client's connection") {
  LoopbackServer server;
  const std::size_t before = open_sockets();
  auto options = blocking_only();
  options.drive_blocking_calls = false;
  Client client(server.url(), options);
  std::vector<std::thread> threads;
  std::atomic<int> right{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] { right += answers(client.infer(simple_request(t, 1)), t, 1); });
  }
  for (auto& thread : threads) thread.join();
  CHECK(right == 4);
  CHECK(open_sockets() - before == 2);
}

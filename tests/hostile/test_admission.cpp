// Fair admission: connections that never finish a request cannot lock real clients out of a
// port (at its cap, the one that waited longest for a request makes room).
#include <doctest/doctest.h>
#include <sys/resource.h>

#include <thread>

#include "attacks.hpp"
#include "hostile_target.hpp"

using namespace sonic;
using namespace sonic::test;
using namespace std::chrono_literals;

namespace {

void raise_file_limit() {
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);
}

// Connections to `port` that each send `first` and then nothing, `count` of them.
std::vector<RawSocket> stalled_connections(int port, int count, const std::string& first) {
  std::vector<RawSocket> sockets;
  for (int i = 0; i < count; ++i) {
    sockets.emplace_back(port);
    if (!first.empty()) sockets.back().send(first);
  }
  return sockets;
}

// The status line of the answer to `request` on a fresh connection to `port` (empty: none).
std::string status_line_of(int port, const std::string& request) {
  RawSocket socket(port);
  socket.send(request);
  std::string answer = socket.receive(3000ms);
  return answer.substr(0, answer.find("\r\n"));
}

}  // namespace

TEST_CASE("a scrape is answered whatever stalled connections hold the metrics port") {
  // Was: 300 connections whose heads never end filled the port's 64 slots, and the next scrape
  // was closed at once, for the handshake timeout (10 s) and again with the next flood.
  raise_file_limit();
  HostileTarget target;
  auto held = stalled_connections(target.metrics_port(), 300, "GET /metrics HTTP/1.1\r\nX-Slow: ");
  std::this_thread::sleep_for(200ms);
  CHECK(status_line_of(target.metrics_port(), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n") ==
        "HTTP/1.1 200 OK");
  // Those that made room were the oldest: the most recent ones still wait.
  CHECK(held.front().closed_by_peer(500ms));
  CHECK_FALSE(held.back().closed_by_peer(100ms));
  CHECK(target.ended().empty());
}

TEST_CASE("a request is answered whatever stalled connections hold the HTTP port") {
  raise_file_limit();
  HostileTarget target({"--max-connections", "50"});
  auto silent = stalled_connections(target.http_port(), 30, "");
  auto slow =
      stalled_connections(target.http_port(), 30, "GET /v2/health/ready HTTP/1.1\r\nX-Slow: ");
  std::this_thread::sleep_for(200ms);
  CHECK(status_line_of(target.http_port(), "GET /v2/health/ready HTTP/1.1\r\nHost: x\r\n\r\n") ==
        "HTTP/1.1 200 OK");
  CHECK(target.ended().empty());
}

TEST_CASE("a gRPC client is served whatever stalled connections hold the port") {
  raise_file_limit();
  HostileTarget target({"--max-connections", "50"});
  auto silent = stalled_connections(target.grpc_port(), 30, "");
  auto held = attack::half_prefaces(target.grpc_port(), 30);
  std::this_thread::sleep_for(200ms);
  Probe probe(target.grpc_url());
  std::this_thread::sleep_for(300ms);
  auto report = probe.stop();
  CHECK(report.requests > 0);
  CHECK_MESSAGE(report.failures == 0, report.first_failure);
  CHECK(target.ended().empty());
}

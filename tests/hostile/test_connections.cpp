// Connections that never become clients: half-finished handshakes, more connections than the
// server allows, header blocks that decode to megabytes. The server ends them on its own
// schedule, and the clients that do behave keep being served.
#include <doctest/doctest.h>
#include <sys/resource.h>

#include <thread>

#include "attacks.hpp"
#include "eventually.hpp"
#include "hostile_target.hpp"
#include "test_certificates.hpp"

using namespace sonic::test;
using namespace std::chrono_literals;

namespace {

// Enough file descriptors for a few thousand connections (the hard limit allows it on CI).
void raise_descriptor_limit() {
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);
}

}  // namespace

TEST_CASE("connections that never finish the handshake are closed, and cost little meanwhile") {
  // Was: 271 KiB each, never closed (no handshake timeout, no connection limit).
  raise_descriptor_limit();
  HostileTarget target({"--handshake-timeout", "2"});
  const long before = target.resident_kib();
  auto sockets = attack::half_prefaces(target.grpc_port(), 2000);
  std::this_thread::sleep_for(500ms);
  const long growth = target.resident_kib() - before;
  MESSAGE("2000 half-open connections: +" << growth << " KiB");
  CHECK(growth < 2000 * 32 * kSanitizerSlack);
  {
    Probe probe(target.grpc_url());
    std::this_thread::sleep_for(300ms);
    auto report = probe.stop();
    CHECK_MESSAGE(report.failures == 0, report.first_failure);
  }
  // All of them closed by the server within its handshake timeout (and some slack).
  std::size_t closed = 0;
  for (auto& socket : sockets) closed += socket.closed_by_peer(4000ms) ? 1 : 0;
  CHECK(closed == sockets.size());
  CHECK(target.ended().empty());
}

TEST_CASE("TLS connections that stall in the handshake are closed, within a bounded memory") {
  // Each holds an OpenSSL connection and Asio's record buffers (about 90 KiB once idle, see
  // docs/limits.md) until the handshake timeout ends it.
  raise_descriptor_limit();
  TestCertificates certs;
  HostileTarget target({"--handshake-timeout", "2", "--tls-cert", certs.file("server.pem"),
                        "--tls-key", certs.file("server.key")});
  const long before = target.resident_kib();
  // A TLS record header that announces a 512-byte handshake message, and nothing of it.
  const std::string stalled_hello("\x16\x03\x01\x02\x00", 5);
  std::vector<RawSocket> sockets;
  for (int i = 0; i < 1000; ++i) {
    sockets.emplace_back(target.grpc_port());
    sockets.back().send(stalled_hello);
  }
  std::this_thread::sleep_for(500ms);
  const long growth = target.resident_kib() - before;
  MESSAGE("1000 stalled TLS handshakes: +" << growth << " KiB");
  CHECK(growth < 1000 * 128 * kSanitizerSlack);
  {
    sonic::ClientOptions trusting;
    trusting.tls.ca_file = certs.file("ca.pem");
    Probe probe("grpcs://127.0.0.1:" + std::to_string(target.grpc_port()), 50ms, trusting);
    std::this_thread::sleep_for(300ms);
    auto report = probe.stop();
    CHECK(report.requests > 0);
    CHECK_MESSAGE(report.failures == 0, report.first_failure);
  }
  std::size_t closed = 0;
  for (auto& socket : sockets) closed += socket.closed_by_peer(4000ms) ? 1 : 0;
  CHECK(closed == sockets.size());
  CHECK(target.ended().empty());
}

TEST_CASE("connections over the limit are closed at once; those under it are served") {
  // Connections that began a call: none of them makes room for a newcomer
  // (test_admission.cpp has those that did not).
  raise_descriptor_limit();
  HostileTarget target({"--max-connections", "50"});
  std::vector<RawSocket> sockets;
  for (int i = 0; i < 49; ++i)
    sockets.push_back(attack::declared_and_stalled(target.grpc_port(), 1, 1024));
  Probe probe(target.grpc_url());  // the 50th
  std::this_thread::sleep_for(200ms);
  RawSocket over(target.grpc_port());
  CHECK(over.closed_by_peer(2000ms));
  auto report = probe.stop();
  CHECK_MESSAGE(report.failures == 0, report.first_failure);
  CHECK(report.requests > 0);
}

TEST_CASE("an HPACK bomb ends its connection and does not slow other clients") {
  // Was: 1.2 MiB/s of header blocks pegged a core: the probe's p50 went from 1 ms to 861 ms.
  // Blocks of 256 references decode to 1 MiB each; blocks of 16 to 64 KiB, within 4 times
  // the limit, which a bomb that knows the rule would send.
  for (int references : {256, 16}) {
    CAPTURE(references);
    HostileTarget target;
    Probe probe(target.grpc_url(), 10ms);
    auto bomb = attack::hpack_bomb(target.grpc_port(), 3000ms, 1200 * 1024, references);
    std::this_thread::sleep_for(200ms);
    auto report = probe.stop();
    MESSAGE("bomb sent " << (bomb.sent >> 10) << " KiB; closed: " << bomb.closed_by_server
                         << "; probe p50 " << report.p50_ms << " ms, p99 " << report.p99_ms
                         << " ms over " << report.requests << " requests");
    CHECK(bomb.closed_by_server);
    CHECK(bomb.sent < 64 * 1024);
    CHECK(report.failures == 0);
    CHECK(report.p50_ms < 20);
    CHECK(target.ended().empty());
  }
}

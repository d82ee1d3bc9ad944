// The same hostility on sonic's TCP port (tcp:// and tcp+zstd://): floods, declared lengths
// that never arrive, and zstd data that decodes to far more than it weighs.
#include <doctest/doctest.h>

#include <thread>

#include "attacks.hpp"
#include "hostile_target.hpp"

using namespace sonic::test;
using namespace std::chrono_literals;

namespace {

constexpr int kResourceExhausted = 8;

void check_served(HostileTarget& target) {
  REQUIRE_MESSAGE(target.ended().empty(), "the server " << target.ended());
  Probe probe(target.grpc_url());
  std::this_thread::sleep_for(300ms);
  auto report = probe.stop();
  CHECK_MESSAGE(report.failures == 0, report.first_failure);
  CHECK(report.requests > 0);
}

}  // namespace

// Sanitizers reserve terabytes of address space for their shadow memory: a sanitized server
// cannot start under `ulimit -v`, so the unsanitized build alone runs this one.
#if defined(SONIC_TEST_SANITIZED)
constexpr bool kAddressSpaceCanBeLimited = false;
#else
constexpr bool kAddressSpaceCanBeLimited = true;
#endif

TEST_CASE("a zstd tensor that claims more than the address space allows is refused, not a crash" *
          doctest::skip(!kAddressSpaceCanBeLimited)) {
  // Was: under `ulimit -v 1G` (common on batch nodes), a zstd record declaring 1.5 GiB aborted
  // the server with an uncaught std::bad_alloc.
  HostileTarget target({"--max-message-bytes", "2000M", "--max-connection-buffered-bytes", "2000M",
                        "--max-buffered-bytes", "2000M"},
                       ChildLimits{rlim_t{1} << 30});
  std::string answer = attack::tcp_zstd_tensor(target.tcp_port(), std::uint64_t{1536} << 20, true);
  CHECK(attack::tcp_error_code(answer) == kResourceExhausted);
  check_served(target);
}

TEST_CASE("zstd data is capped by the message limit before it is decompressed") {
  // Was: a 16 KiB frame decompressed to +513 MiB.
  HostileTarget target;  // the default limit: 512 MiB per message
  long growth = peak_growth_kib(target, [&] {
    std::string answer = attack::tcp_zstd_tensor(target.tcp_port(), std::uint64_t{600} << 20, true);
    CHECK(attack::tcp_error_code(answer) == kResourceExhausted);
  });
  MESSAGE("zstd bomb of 600 MiB: +" << growth << " KiB");
  CHECK(growth < 32 * 1024 * kSanitizerSlack);
  check_served(target);
}

TEST_CASE("a TCP ping flood that never reads the pongs costs little and is bounded") {
  // Was: 128 MiB of pings, +3.4 GiB of queued pongs. Now pings that arrive together get one
  // pong, and unread pongs beyond 1 MiB stop the server reading from that client.
  HostileTarget target;
  long growth = peak_growth_kib(target, [&] {
    auto flood = attack::tcp_ping_flood(target.tcp_port(), std::size_t{128} << 20);
    MESSAGE("sent " << (flood.sent >> 20) << " MiB of pings");
  });
  MESSAGE("+" << growth << " KiB");
  CHECK(growth < 32 * 1024 * kSanitizerSlack);
  check_served(target);
}

TEST_CASE("declared TCP tensor lengths cost memory only as their bytes arrive") {
  // Was: 2.3 MiB per connection that declares a large tensor and stalls. Now the 1 GiB budget
  // admits ten of these 100 MiB frames (a huge page each: 20 MiB) and the others wait unread.
  HostileTarget target;
  std::vector<RawSocket> held;
  long growth = peak_growth_kib(target, [&] {
    for (int i = 0; i < 300; ++i) {
      held.push_back(attack::tcp_declared_and_stalled(target.tcp_port(), std::uint64_t{100} << 20));
    }
    std::this_thread::sleep_for(500ms);
  });
  MESSAGE("300 stalled connections: +" << growth << " KiB");
  CHECK(growth < (32 * 1024 + 300 * 16) * kSanitizerSlack);
  check_served(target);
}

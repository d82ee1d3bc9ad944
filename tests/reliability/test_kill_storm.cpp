// A kill storm: two real sonic-servers, each SIGKILLed and restarted on its ports every few
// hundred milliseconds, while one client keeps requests in flight with short deadlines, over
// grpc:// and over tcp://. Every request must be answered exactly once. How late outcomes come
// after their requests' deadlines is printed per transport (the bound a deadline should keep is
// the subject of its own work: the figures here are what it starts from).
//
// The environment can make it the storm of a longer run: SONIC_STORM_SECONDS (2),
// SONIC_STORM_IN_FLIGHT (500), SONIC_STORM_DEADLINE_MS (500), and SONIC_STORM_BOTH=1 to kill
// both servers at once rather than in turn. Both at once with 100 ms deadlines and 2,000 in
// flight, on the 2-core VM (two runs): between 1 outcome in 12 and 1 in 3 after its deadline,
// the latest 88 to 154 ms late, on both transports.
#include <doctest/doctest.h>

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "child_server.hpp"
#include "eventually.hpp"
#include "sanitizers.hpp"
#include "sonic/sonic.hpp"

#ifdef SONIC_SERVER_BINARY

using namespace sonic;
using namespace std::chrono_literals;
using test::ChildServer;

namespace {

#if defined(SONIC_TEST_SANITIZED)
constexpr int kStormSlowdown = 4;  // sanitizers slow everything several times
#else
constexpr int kStormSlowdown = 1;
#endif
constexpr auto kKillEvery = 200ms;

// A setting from the environment, or its default.
long setting(const char* name, long fallback) {
  const char* value = std::getenv(name);
  return value && *value ? std::strtol(value, nullptr, 10) : fallback;
}

// A sonic-server on fixed ports once it has them (a restart takes the same ones back).
class StormServer {
 public:
  StormServer() { start(); }

  const std::string& url(const std::string& scheme) const {
    return scheme == "tcp" ? tcp_url_ : grpc_url_;
  }

  void kill_and_restart() {
    child_->kill_now(SIGKILL);
    start();
  }

 private:
  void start() {
    child_ = std::make_unique<ChildServer>(
        std::vector<std::string>{SONIC_SERVER_BINARY, "--host", "127.0.0.1", "--port",
                                 std::to_string(grpc_port_), "--tcp-port",
                                 std::to_string(tcp_port_)},
        "sonic-server listening on 127.0.0.1:");
    grpc_port_ = child_->port();
    tcp_port_ = child_->next_port("sonic-server tcp listening on 127.0.0.1:");
    grpc_url_ = "grpc://127.0.0.1:" + std::to_string(grpc_port_);
    tcp_url_ = "tcp://127.0.0.1:" + std::to_string(tcp_port_);
  }

  std::unique_ptr<ChildServer> child_;
  int grpc_port_ = 0;
  int tcp_port_ = 0;
  std::string grpc_url_, tcp_url_;
};

// What the storm's outcomes were.
struct Outcomes {
  std::atomic<std::size_t> sent{0}, answered{0}, twice{0}, ok{0}, late{0};
  std::mutex mutex;
  std::vector<Clock::duration> lateness;  // of each outcome after its deadline
};

void storm(const std::string& scheme) {
  const auto storm_for = std::chrono::seconds(setting("SONIC_STORM_SECONDS", 2));
  const auto deadline_after = std::chrono::milliseconds(setting("SONIC_STORM_DEADLINE_MS", 500));
  const auto max_in_flight = static_cast<std::size_t>(setting("SONIC_STORM_IN_FLIGHT", 500));
  const bool both = setting("SONIC_STORM_BOTH", 0) != 0;
  StormServer a, b;
  ClientOptions options;
  options.endpoints = {a.url(scheme), b.url(scheme)};
  options.breaker.cool_down = 50ms;
  options.breaker.probe_interval = 20ms;
  Client client(options);

  Outcomes outcomes;
  std::atomic<std::size_t> in_flight{0};
  std::vector<std::unique_ptr<std::atomic<int>>> calls;
  std::mutex calls_mutex;
  std::atomic<bool> storming{true};
  std::string killer_failed;  // a restart that failed (its port taken, say) ends the storm
  std::thread killer([&] {
    bool first = true;
    try {
      while (storming) {
        std::this_thread::sleep_for(kKillEvery);
        if (!storming) break;
        if (both || first) a.kill_and_restart();
        if (both || !first) b.kill_and_restart();
        first = !first;
      }
    } catch (const std::exception& e) {
      killer_failed = e.what();
      storming = false;
    }
  });

  const auto stop_at = Clock::now() + storm_for;
  while (Clock::now() < stop_at && storming) {
    if (in_flight.load() >= max_in_flight) {
      std::this_thread::sleep_for(1ms);
      continue;
    }
    std::atomic<int>* count;
    {
      std::lock_guard<std::mutex> lock(calls_mutex);
      calls.push_back(std::make_unique<std::atomic<int>>(0));
      count = calls.back().get();
    }
    const Deadline deadline = Clock::now() + deadline_after;
    ++in_flight;
    ++outcomes.sent;
    client.infer_async(
        InferRequest("simple")
            .input("INPUT0", Tensor::from_vector(std::vector<std::int32_t>(16, 1), {1, 16}))
            .input("INPUT1", Tensor::from_vector(std::vector<std::int32_t>(16, 2), {1, 16}))
            .timeout(std::chrono::duration_cast<std::chrono::microseconds>(deadline_after)),
        [&, count, deadline](Result<InferResult> result) {
          const auto now = Clock::now();
          if (count->fetch_add(1) > 0) ++outcomes.twice;
          if (result) ++outcomes.ok;
          if (now > deadline) {
            ++outcomes.late;
            std::lock_guard<std::mutex> lock(outcomes.mutex);
            outcomes.lateness.push_back(now - deadline);
          }
          ++outcomes.answered;
          --in_flight;
        });
  }
  storming = false;
  killer.join();
  CHECK_MESSAGE(killer_failed.empty(), killer_failed);
  CHECK(test::eventually([&] { return outcomes.answered == outcomes.sent; }, 10s * kStormSlowdown));

  std::vector<Clock::duration> lateness;
  {
    std::lock_guard<std::mutex> lock(outcomes.mutex);
    lateness = outcomes.lateness;
  }
  std::sort(lateness.begin(), lateness.end());
  auto ms = [](Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
  const auto over = [&](Clock::duration bound) {
    return lateness.end() - std::upper_bound(lateness.begin(), lateness.end(), bound);
  };
  MESSAGE(scheme, "://, kill storm: ", outcomes.sent.load(), " requests, ", outcomes.ok.load(),
          " answered OK, ", outcomes.late.load(), " outcomes after their deadline (", over(20ms),
          " by more than 20 ms, ", over(100ms), " by more than 100 ms), the latest ",
          lateness.empty() ? 0.0 : ms(lateness.back()), " ms late; lost ",
          outcomes.sent.load() - outcomes.answered.load());
  CHECK(outcomes.twice == 0);
  CHECK(outcomes.answered == outcomes.sent);
  CHECK(outcomes.ok > 0);
}

}  // namespace

TEST_CASE("kill storm over grpc:// and tcp://: every request answered once, lateness reported") {
  storm("grpc");
  storm("tcp");
}

#endif

// A kill storm: two real sonic-servers, SIGKILLed and restarted on their ports every 200 ms,
// while one client sends requests with short deadlines, over grpc:// and over tcp://. Every
// request must be answered exactly once, and none later than its deadline plus 20 ms: the
// transports end calls at their deadlines, and the client's deadline watch decides any a
// transport has not decided 5 ms after (deadline_watch.hpp), whatever the connection is doing.
//
// The bound is checked on a paced load (4,000 requests a second, 100 ms deadlines, both servers
// killed at once, so that requests expire while nothing listens), with the servers scheduled
// SCHED_IDLE: on this 2-core machine a server's restart takes a core for tens of milliseconds
// ten times a second, which in service happens on other machines. (At nice 10 a restart still
// held a core while a client thread waited: one outcome in 8,000 came 20.7 ms late.) The suite
// runs alone under `ctest -j` (tests/reliability/CMakeLists.txt), so the idle cores are there.
// It is not checked under the sanitizers, which slow the client several times. A second storm
// is an overload: a closed loop that replaces each answered request at once keeps 500 in flight
// and takes every cycle the machine has (failures are fast while both servers are down), and a
// thread that waits for a core cannot keep a bound; its lateness is printed, and every request
// is answered once.
//
// The environment can make either the storm of a longer run: SONIC_STORM_SECONDS (2),
// SONIC_STORM_IN_FLIGHT (500), SONIC_STORM_DEADLINE_MS (100 paced, 500 closed loop),
// SONIC_STORM_RATE (4000 requests a second, paced), SONIC_STORM_BOTH (1 paced, 0 closed loop:
// the servers in turn).
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
// A client slowed several times may leave no core idle: SCHED_IDLE servers would never start.
constexpr bool kIdleServers = false;
#else
constexpr int kStormSlowdown = 1;
constexpr bool kIdleServers = true;
#endif
constexpr auto kKillEvery = 200ms;
// The servers run at a lower priority than the client: here they share its two cores, and a
// restart (loading libraries and models) takes a core for tens of milliseconds, ten times a
// second. In service they run on machines of their own; what is measured is the client. Under
// the paced load, where the bound is checked, they run only on a core the client leaves idle
// (SCHED_IDLE); the closed loop leaves none, so there they are only niced.
constexpr int kServerNice = 10;

// A setting from the environment, or its default.
long setting(const char* name, long fallback) {
  const char* value = std::getenv(name);
  return value && *value ? std::strtol(value, nullptr, 10) : fallback;
}

// A sonic-server on fixed ports once it has them (a restart takes the same ones back).
class StormServer {
 public:
  explicit StormServer(bool idle) : idle_(idle) { start(); }

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
                                 std::to_string(tcp_port_), "--allow-metrics", "false",
                                 "--allow-http", "false"},
        "sonic-server listening on 127.0.0.1:", test::ChildLimits{0, kServerNice, idle_});
    grpc_port_ = child_->port();
    tcp_port_ = child_->next_port("sonic-server tcp listening on 127.0.0.1:");
    grpc_url_ = "grpc://127.0.0.1:" + std::to_string(grpc_port_);
    tcp_url_ = "tcp://127.0.0.1:" + std::to_string(tcp_port_);
  }

  bool idle_;
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

// How the storm's client sends: `rate` requests a second (0: a closed loop, each answered
// request replaced at once), never more than `max_in_flight` at a time.
struct Load {
  long rate;
  std::size_t max_in_flight;
  std::chrono::milliseconds deadline_after;
  std::size_t servers;  // the client's endpoints: one server, or two
  bool both;            // two servers killed at once, else in turn
};

Load paced() {
  // Under the sanitizers a quarter of the rate: at 4,000 a second the slowed client fell so far
  // behind that in some runs (ThreadSanitizer) no request was answered within its deadline.
  return {setting("SONIC_STORM_RATE", 4000 / kStormSlowdown),
          static_cast<std::size_t>(setting("SONIC_STORM_IN_FLIGHT", 2000)),
          std::chrono::milliseconds(setting("SONIC_STORM_DEADLINE_MS", 100)),
          static_cast<std::size_t>(setting("SONIC_STORM_SERVERS", 1)),
          setting("SONIC_STORM_BOTH", 1) != 0};
}

Load closed_loop() {
  return {0, static_cast<std::size_t>(setting("SONIC_STORM_IN_FLIGHT", 500)),
          std::chrono::milliseconds(setting("SONIC_STORM_DEADLINE_MS", 500)),
          static_cast<std::size_t>(setting("SONIC_STORM_SERVERS", 2)),
          setting("SONIC_STORM_BOTH", 0) != 0};
}

// Runs the storm; returns how late the latest outcome came after its deadline.
Clock::duration storm(const std::string& scheme, const Load& load) {
  const auto storm_for = std::chrono::seconds(setting("SONIC_STORM_SECONDS", 2));
  const auto deadline_after = load.deadline_after;
  const std::size_t max_in_flight = load.max_in_flight;
  const bool both = load.both || load.servers == 1;
  std::vector<std::unique_ptr<StormServer>> servers;
  ClientOptions options;
  for (std::size_t i = 0; i < std::max<std::size_t>(load.servers, 1); ++i) {
    servers.push_back(std::make_unique<StormServer>(kIdleServers && load.rate > 0));
    options.endpoints.push_back(servers.back()->url(scheme));
  }
  options.breaker.cool_down = 50ms;
  options.breaker.probe_interval = 20ms;
  // Back in service by the next restart (the default backoff doubles from 100 ms to 5 s).
  options.reconnect_backoff = 20ms;
  options.reconnect_backoff_max = 100ms;
  Client client(options);

  Outcomes outcomes;
  std::atomic<std::size_t> in_flight{0};
  std::vector<std::unique_ptr<std::atomic<int>>> calls;
  std::mutex calls_mutex;
  std::atomic<bool> storming{true};
  std::string killer_failed;  // a restart that failed (its port taken, say) ends the storm
  std::thread killer([&] {
    std::size_t turn = 0;  // the server killed next, when they go in turn
    try {
      while (storming) {
        std::this_thread::sleep_for(kKillEvery);
        if (!storming) break;
        for (std::size_t i = 0; i < servers.size(); ++i) {
          if (both || i == turn) servers[i]->kill_and_restart();
        }
        turn = (turn + 1) % servers.size();
      }
    } catch (const std::exception& e) {
      killer_failed = e.what();
      storming = false;
    }
  });

  // Paced: a millisecond's requests at a time.
  const long per_tick = std::max(1L, load.rate / 1000);
  long sent_this_tick = 0;
  auto tick = Clock::now();
  const auto stop_at = Clock::now() + storm_for;
  while (Clock::now() < stop_at && storming) {
    if (load.rate > 0 && sent_this_tick == per_tick) {
      tick += 1ms;
      std::this_thread::sleep_until(tick);
      sent_this_tick = 0;
    }
    if (in_flight.load() >= max_in_flight) {
      if (load.rate > 0) {
        ++sent_this_tick;  // dropped, as a paced source drops what it cannot place
      } else {
        std::this_thread::sleep_for(1ms);
      }
      continue;
    }
    ++sent_this_tick;
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
  MESSAGE(scheme, "://, kill storm (",
          load.rate > 0 ? std::to_string(load.rate) + " requests/s" : "closed loop", ", ",
          deadline_after.count(), " ms deadlines, ", servers.size(),
          std::string(servers.size() == 1 ? " server"
                      : both              ? " servers killed at once"
                                          : " servers killed in turn"),
          "): ", outcomes.sent.load(), " requests, ", outcomes.ok.load(), " answered OK, ",
          outcomes.late.load(), " outcomes after their deadline (", over(20ms),
          " by more than 20 ms, ", over(100ms), " by more than 100 ms), the latest ",
          lateness.empty() ? 0.0 : ms(lateness.back()), " ms late; lost ",
          outcomes.sent.load() - outcomes.answered.load());
  CHECK(outcomes.twice == 0);
  CHECK(outcomes.answered == outcomes.sent);
  CHECK(outcomes.ok > 0);
  return lateness.empty() ? Clock::duration::zero() : lateness.back();
}

}  // namespace

TEST_CASE(
    "kill storm over grpc:// and tcp://: every request answered once, by its deadline + 20 ms") {
  for (const std::string scheme : {"grpc", "tcp"}) {
    CAPTURE(scheme);
    const auto latest = storm(scheme, paced());
#if !defined(SONIC_TEST_SANITIZED)
    CHECK(latest <= 20ms);
#else
    (void)latest;
#endif
  }
}

TEST_CASE(
    "kill storm under overload (a closed loop): every request answered once, lateness reported") {
  storm("grpc", closed_loop());
  storm("tcp", closed_loop());
}

#endif

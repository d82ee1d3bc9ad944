// Every request completes exactly once, as fast as the healthy resources allow: retries,
// other endpoints, the circuit breaker and the CPU fallback, under injected faults.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "child_server.hpp"
#include "eventually.hpp"
#include "fault_proxy.hpp"
#include "loopback_server.hpp"
#include "loopback_socket.hpp"
#include "sanitizers.hpp"

using namespace sonic;
using namespace sonic::test;
using namespace std::chrono_literals;

namespace {

// Sanitizers slow everything several times; timeouts in these tests scale with them.
#if defined(SONIC_TEST_SANITIZED)
constexpr int kSlowdown = 4;
#else
constexpr int kSlowdown = 1;
#endif

// Collects log messages; counts those containing a phrase.
struct LogRecorder {
  std::mutex mutex;
  std::vector<std::string> lines;
  LogHook hook() {
    return [this](LogLevel, const std::string& line) {
      std::lock_guard<std::mutex> lock(mutex);
      lines.push_back(line);
    };
  }
  int count(const std::string& phrase) {
    std::lock_guard<std::mutex> lock(mutex);
    int n = 0;
    for (const auto& line : lines) n += line.find(phrase) != std::string::npos;
    return n;
  }
};

bool right_answer(const Result<InferResult>& r, std::int32_t a, std::int32_t b) {
  return r && r->output("OUTPUT0").as<std::int32_t>()[0] == a + b &&
         r->output("OUTPUT1").as<std::int32_t>()[0] == a - b;
}

}  // namespace

TEST_CASE("a reset connection is retried and the request succeeds") {
  LoopbackServer server;
  FaultProxy proxy(server.port());
  Client client(proxy.url());
  REQUIRE(right_answer(client.infer(simple_request(1, 2)), 1, 2));
  std::vector<float> data(4);
  auto slow =
      client.infer_future(InferRequest(kSlowModel).input("INPUT0", Tensor::view(data, {2, 2})));
  std::this_thread::sleep_for(100ms);
  proxy.reset_all();  // the in-flight request loses its connection
  CHECK(slow.get().output("OUTPUT0").byte_size() == 16);
  CHECK(client.stats().retries >= 1);
}

TEST_CASE("client mistakes are never retried") {
  LoopbackServer server;
  ClientOptions options;
  options.validate_inputs = false;
  Client client(server.url(), options);
  std::vector<float> wrong(16);
  auto bad =
      client.infer_future(InferRequest("simple").input("INPUT0", Tensor::view(wrong, {1, 16})));
  CHECK_THROWS_AS(bad.get(), Error);
  auto unknown = client.infer_future(InferRequest("nope").input("X", Tensor::view(wrong, {16})));
  CHECK_THROWS_AS(unknown.get(), Error);
  auto stats = client.stats();
  CHECK(stats.retries == 0);
  CHECK(stats.failures_by_code[static_cast<int>(StatusCode::InvalidArgument)] == 1);
  CHECK(stats.failures_by_code[static_cast<int>(StatusCode::NotFound)] == 1);
}

TEST_CASE("a dead endpoint is ejected and the live one serves every request") {
  LoopbackServer server;
  LogRecorder log;
  ClientOptions options;
  options.endpoints = {unused_url(), server.url()};
  options.log = log.hook();
  Client client(options);
  for (int i = 0; i < 50; ++i) CHECK(right_answer(client.infer(simple_request(i, 1)), i, 1));
  auto stats = client.stats();
  CHECK_FALSE(stats.endpoints[0].healthy);
  CHECK(stats.endpoints[0].ejections == 1);
  CHECK(stats.endpoints[1].successes == 50);
  CHECK(stats.failed == 0);
  CHECK(log.count("ejected") == 1);
  CHECK(stats.to_json().find("\"healthy\":false") != std::string::npos);
}

TEST_CASE("an ejected endpoint comes back when it answers again, and load spreads over both") {
  LoopbackServer a, b;
  FaultProxy proxy(a.port());
  LogRecorder log;
  ClientOptions options;
  options.endpoints = {proxy.url(), b.url()};
  options.breaker.cool_down = 100ms;
  options.breaker.probe_interval = 20ms;
  options.log = log.hook();
  Client client(options);
  proxy.refuse(true);
  for (int i = 0; i < 20; ++i) CHECK(right_answer(client.infer(simple_request(i, 2)), i, 2));
  REQUIRE_FALSE(client.stats().endpoints[0].healthy);
  proxy.refuse(false);
  CHECK(eventually([&] { return client.stats().endpoints[0].healthy; }));
  CHECK(log.count("back in rotation") == 1);
  auto before = client.stats().endpoints[0].successes;
  for (int i = 0; i < 40; ++i) CHECK(right_answer(client.infer(simple_request(i, 3)), i, 3));
  CHECK(client.stats().endpoints[0].successes > before);  // ties rotate over both endpoints
}

TEST_CASE("with every server down, requests run on the CPU executor; one log line per transition") {
  auto server = std::make_unique<LoopbackServer>();
  FaultProxy proxy(server->port());
  LogRecorder log;
  ClientOptions options;
  options.endpoints = {proxy.url()};
  options.fallback = CpuExecutor::with_models(models::builtin(), 2);
  options.breaker.cool_down = 100ms;
  options.breaker.probe_interval = 20ms;
  options.log = log.hook();
  Client client(options);
  CHECK(client.infer(simple_request(1, 1)).executed_on() == ExecutedOn::Remote);

  proxy.refuse(true);
  proxy.reset_all();
  for (int i = 0; i < 100; ++i) {
    auto r = client.infer(simple_request(i, 5));
    CHECK(r.executed_on() == ExecutedOn::Local);
    CHECK(r.output("OUTPUT0").as<std::int32_t>()[0] == i + 5);
  }
  CHECK(log.count("running requests on the CPU executor") == 1);
  CHECK(client.stats().fallbacks == 100);
  CHECK(client.stats().failed == 0);

  proxy.refuse(false);
  CHECK(eventually([&] { return client.stats().endpoints[0].healthy; }));
  CHECK(client.infer(simple_request(2, 2)).executed_on() == ExecutedOn::Remote);
  CHECK(log.count("servers answer again") == 1);
}

TEST_CASE("a model the servers do not host runs on the fallback") {
  LoopbackServer server;
  auto local = std::make_shared<CpuExecutor>(1);
  local->add_model(models::identity("local_only", DataType::Fp32));
  ClientOptions options;
  options.fallback = local;
  Client client(server.url(), options);
  std::vector<float> data = {1, 2, 3, 4};
  auto r = client.infer(InferRequest("local_only").input("INPUT0", Tensor::view(data, {2, 2})));
  CHECK(r.executed_on() == ExecutedOn::Local);
  CHECK(r.output("OUTPUT0").as<float>()[3] == 4.f);
}

TEST_CASE("a stalled endpoint: per-attempt timeouts move requests to the healthy one") {
  LoopbackServer a, b;
  FaultProxy proxy(a.port());
  ClientOptions options;
  options.endpoints = {proxy.url(), b.url()};
  options.retry.per_attempt_timeout = 150ms;
  options.validate_inputs = false;
  Client client(options);
  proxy.stall();
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i) {
    CHECK(right_answer(client.infer(simple_request(i, 7).timeout(2s)), i, 7));
  }
  CHECK(ms_since(start) < 2000);
  CHECK_FALSE(client.stats().endpoints[0].healthy);
  proxy.pass();
}

TEST_CASE("a latency budget starts the request locally when the server is slow to answer") {
  LoopbackServer server;
  FaultProxy proxy(server.port());
  ClientOptions options;
  options.fallback = CpuExecutor::with_models(models::builtin(), 1);
  options.fallback_latency_budget = 100ms;
  Client client(proxy.url(), options);
  proxy.stall();
  auto start = std::chrono::steady_clock::now();
  auto r = client.infer(simple_request(3, 4).timeout(3s));
  CHECK(r.executed_on() == ExecutedOn::Local);
  CHECK(ms_since(start) < 1000);
  proxy.pass();
}

TEST_CASE("chaos: thousands of requests from several threads, faults injected, none lost") {
  LoopbackServer a, b;
  FaultProxy pa(a.port()), pb(b.port());
  ClientOptions options;
  options.endpoints = {pa.url(), pb.url()};
  options.fallback = CpuExecutor::with_models(models::builtin(), 2);
  options.breaker.cool_down = 50ms;
  options.breaker.probe_interval = 20ms;
  options.retry.per_attempt_timeout = 300ms * kSlowdown;
  Client client(options);

  constexpr int kThreads = 4, kPerThread = 500;
  std::vector<std::atomic<int>> calls(kThreads * kPerThread);
  std::atomic<int> completed{0}, wrong{0}, failed{0};
  std::atomic<bool> chaos_on{true};
  std::thread chaos([&] {
    int step = 0;
    while (chaos_on) {
      FaultProxy& p = (step % 2) ? pa : pb;
      switch (step++ % 5) {
        case 0: p.reset_all(); break;
        case 1: p.cut_after(300); break;
        case 2: p.refuse(true); break;
        case 3: p.refuse(false); break;
        case 4: p.pass(); break;
      }
      std::this_thread::sleep_for(30ms);
    }
    for (FaultProxy* p : {&pa, &pb}) {
      p->refuse(false);
      p->pass();
    }
  });
  std::vector<std::thread> senders;
  for (int t = 0; t < kThreads; ++t) {
    senders.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        int n = t * kPerThread + i;
        client.infer_async(simple_request(n, 1).timeout(10s * kSlowdown),
                           [&, n](Result<InferResult> r) {
                             calls[static_cast<std::size_t>(n)]++;
                             if (!r) {
                               ++failed;
                             } else if (!right_answer(r, n, 1)) {
                               ++wrong;
                             }
                             ++completed;
                           });
        if (i % 50 == 0) std::this_thread::sleep_for(10ms);  // spread over the chaos
      }
    });
  }
  for (auto& s : senders) s.join();
  CHECK(eventually([&] { return completed == kThreads * kPerThread; }, 30s));
  chaos_on = false;
  chaos.join();
  auto stats = client.stats();
  MESSAGE("chaos: ", stats.to_json());
  CHECK(completed == kThreads * kPerThread);
  CHECK(failed == 0);
  CHECK(wrong == 0);
  for (auto& c : calls) CHECK(c.load() == 1);
}

namespace {

struct Tally {
  std::atomic<int> completed{0}, failed{0}, wrong{0}, twice{0};
};

// Sends 1000 requests from 4 threads while `fault` acts on the proxy of endpoint A, and reports
// what happened. Endpoint B serves beside A; with `alone_with_fallback`, A is the only endpoint
// and the CPU executor is the fallback.
void run_fault(const std::string& name, const std::function<void(FaultProxy&)>& fault,
               bool alone_with_fallback) {
  LoopbackServer a, b;
  FaultProxy pa(a.port());
  ClientOptions options;
  options.endpoints = {pa.url(), b.url()};
  options.retry.per_attempt_timeout = 250ms * kSlowdown;
  options.breaker.cool_down = 100ms;
  options.breaker.probe_interval = 20ms;
  if (alone_with_fallback) {
    options.endpoints = {pa.url()};
    options.fallback = CpuExecutor::with_models(models::builtin(), 2);
  }
  Client client(options);
  constexpr int kThreads = 4, kPerThread = 250;
  Tally tally;
  std::vector<std::atomic<int>> calls(kThreads * kPerThread);
  std::vector<std::thread> senders;
  for (int t = 0; t < kThreads; ++t) {
    senders.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        int n = t * kPerThread + i;
        client.infer_async(simple_request(n, 2).timeout(10s * kSlowdown),
                           [&, n](Result<InferResult> r) {
                             if (calls[static_cast<std::size_t>(n)]++ > 0) ++tally.twice;
                             if (!r)
                               ++tally.failed;
                             else if (!right_answer(r, n, 2))
                               ++tally.wrong;
                             ++tally.completed;
                           });
        if (i == kPerThread / 5) fault(pa);
        if (i % 25 == 0) std::this_thread::sleep_for(5ms);
      }
    });
  }
  for (auto& s : senders) s.join();
  CHECK(eventually([&] { return tally.completed == kThreads * kPerThread; }, 30s));
  auto stats = client.stats();
  MESSAGE(name, ": sent ", kThreads * kPerThread, ", completed ", tally.completed.load(),
          ", retried ", stats.retries, ", fell back ", stats.fallbacks, ", failed ",
          tally.failed.load(), ", lost ", kThreads * kPerThread - tally.completed.load(), " ",
          stats.to_json());
  CHECK(tally.twice == 0);
  CHECK(tally.wrong == 0);
  CHECK(tally.failed == 0);
  pa.refuse(false);
  pa.pass();
}

}  // namespace

TEST_CASE("fault matrix: each fault on one of two endpoints, 1000 requests, none lost") {
  run_fault(
      "reset", [](FaultProxy& p) { p.reset_all(); }, false);
  run_fault(
      "cut mid-message", [](FaultProxy& p) { p.cut_after(200); }, false);
  run_fault(
      "stall (blackhole)", [](FaultProxy& p) { p.stall(); }, false);
  run_fault(
      "refuse",
      [](FaultProxy& p) {
        p.refuse(true);
        p.reset_all();
      },
      false);
  run_fault(
      "delay 50 ms", [](FaultProxy& p) { p.delay(50ms); }, false);
  auto kill = [](FaultProxy& p) {
    p.refuse(true);
    p.reset_all();
  };
  run_fault("only server refuses (CPU fallback)", kill, true);
  run_fault(
      "only server stalls (CPU fallback)", [](FaultProxy& p) { p.stall(); }, true);
}

TEST_CASE("time from a server's death to the first request served elsewhere") {
  LoopbackServer a, b;
  FaultProxy pa(a.port());
  ClientOptions options;
  options.endpoints = {pa.url(), b.url()};
  Client client(options);
  for (int i = 0; i < 20; ++i) REQUIRE(client.infer(simple_request(i, 0)).outputs().size() == 2);
  // Kill endpoint A (refuse new connections, reset the open one), then measure the first
  // request that completes after it.
  std::vector<double> other, local;
  for (int round = 0; round < 5; ++round) {
    pa.refuse(false);
    pa.pass();
    std::this_thread::sleep_for(20ms);
    auto death = std::chrono::steady_clock::now();
    pa.refuse(true);
    pa.reset_all();
    (void)client.infer(simple_request(round, 1));
    other.push_back(ms_since(death));
  }
  std::sort(other.begin(), other.end());
  MESSAGE("death to first request served by the other endpoint: median ", other[2], " ms");
  CHECK(other[2] < 500);

  ClientOptions alone;
  alone.fallback = CpuExecutor::with_models(models::builtin(), 1);
  for (int round = 0; round < 5; ++round) {
    FaultProxy p(a.port());
    Client solo(p.url(), alone);
    REQUIRE(solo.infer(simple_request(1, 1)).executed_on() == ExecutedOn::Remote);
    auto death = std::chrono::steady_clock::now();
    p.refuse(true);
    p.reset_all();
    auto r = solo.infer(simple_request(1, 1));
    local.push_back(ms_since(death));
    CHECK(r.executed_on() == ExecutedOn::Local);
  }
  std::sort(local.begin(), local.end());
  MESSAGE("death to first request served by the CPU fallback: median ", local[2], " ms");
  CHECK(local[2] < 1000);
}

#ifdef SONIC_SERVER_BINARY
TEST_CASE("a real sonic-server killed with SIGKILL mid-stream, then restarted") {
  auto start_server = [](int port) {
    return std::make_unique<ChildServer>(
        std::vector<std::string>{SONIC_SERVER_BINARY, "--host", "127.0.0.1", "--port",
                                 std::to_string(port), "--allow-metrics", "false", "--allow-http",
                                 "false"},
        "sonic-server listening on 127.0.0.1:");
  };
  auto child = start_server(0);
  int port = child->port();
  LoopbackServer spare;
  ClientOptions options;
  options.endpoints = {"grpc://127.0.0.1:" + std::to_string(port), spare.url()};
  options.breaker.cool_down = 100ms;
  options.breaker.probe_interval = 20ms;
  options.fallback = CpuExecutor::with_models(models::builtin(), 1);
  Client client(options);

  Tally tally;
  constexpr int kRequests = 2000;
  std::vector<std::atomic<int>> calls(kRequests);
  std::vector<float> big(1 << 18, 1.f);  // 1 MiB requests keep streams open when the kill lands
  for (int n = 0; n < kRequests; ++n) {
    auto request =
        (n % 4 == 0)
            ? InferRequest("identity_fp32").input("INPUT0", Tensor::view(big, {1, 1 << 18}))
            : simple_request(n, 3);
    client.infer_async(std::move(request).timeout(10s * kSlowdown), [&, n](Result<InferResult> r) {
      if (calls[static_cast<std::size_t>(n)]++ > 0) ++tally.twice;
      if (!r) {
        ++tally.failed;
      } else if (n % 4 != 0 && !right_answer(r, n, 3)) {
        ++tally.wrong;
      }
      ++tally.completed;
    });
    if (n == kRequests / 4) child->kill_now(SIGKILL);
    if (n == kRequests / 2) child = start_server(port);  // same port: the endpoint returns
    if (n % 100 == 0) std::this_thread::sleep_for(10ms);
  }
  CHECK(eventually([&] { return tally.completed == kRequests; }, 60s));
  CHECK(eventually([&] { return client.stats().endpoints[0].healthy; }));
  auto stats = client.stats();
  MESSAGE("SIGKILL: sent ", kRequests, ", completed ", tally.completed.load(), ", retried ",
          stats.retries, ", fell back ", stats.fallbacks, ", failed ", tally.failed.load(),
          ", lost ", kRequests - tally.completed.load(), " ", stats.to_json());
  CHECK(tally.twice == 0);
  CHECK(tally.failed == 0);
  CHECK(tally.wrong == 0);
  // After the restart the killed endpoint serves again.
  auto before = client.stats().endpoints[0].successes;
  for (int i = 0; i < 20; ++i) CHECK(right_answer(client.infer(simple_request(i, 9)), i, 9));
  CHECK(client.stats().endpoints[0].successes > before);
}
#endif

TEST_CASE("a model only some servers host is routed to those") {
  LoopbackServer a, b;
  b.executor().add_model(models::identity("only_b", DataType::Fp32));
  ClientOptions options;
  options.endpoints = {a.url(), b.url()};
  Client client(options);
  std::vector<float> data = {1, 2, 3, 4};
  for (int i = 0; i < 20; ++i) {
    auto r = client.infer(InferRequest("only_b").input("INPUT0", Tensor::view(data, {2, 2})));
    CHECK(r.output("OUTPUT0").as<float>()[2] == 3.f);
  }
  auto stats = client.stats();
  CHECK(stats.failed == 0);
  CHECK(stats.endpoints[0].attempts <= 1);  // asked once, then skipped for that model
  CHECK(stats.endpoints[1].successes == 20);
  // A model nobody hosts is still NOT_FOUND.
  auto none =
      client.infer_future(InferRequest("nobody").input("INPUT0", Tensor::view(data, {2, 2})));
  try {
    none.get();
    FAIL("must throw");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::NotFound);
  }
}

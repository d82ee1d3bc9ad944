// Retry, circuit breaking and fallback step by step, against fake:// servers that fail exactly
// the calls the test names: no sockets, no timing to wait out except the breaker's own.
#include <doctest/doctest.h>

#include <sonic/builtin_models.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "eventually.hpp"
#include "fake_transport.hpp"
#include "framework_thread.hpp"
#include "loopback_server.hpp"

using namespace sonic;
using namespace sonic::test;
using namespace std::chrono_literals;

namespace {

ClientOptions two_endpoints(const FakeServer& a, const FakeServer& b) {
  ClientOptions options;
  options.endpoints = {a.url(), b.url()};
  options.retry.initial_backoff = 0ms;
  options.breaker.cool_down = 20ms;
  options.breaker.probe_interval = 5ms;
  return options;
}

std::int32_t sum_of(Client& client) {
  return client.infer(simple_request(20, 22)).output("OUTPUT0").as<std::int32_t>()[0];
}

}  // namespace

TEST_CASE("fake: a failed call is retried on the other endpoint and the caller sees an answer") {
  FakeServer a("retry-a"), b("retry-b");
  auto options = two_endpoints(a, b);
  options.validate_inputs = false;  // every call is an inference call
  Client client(options);
  a.fail_call(1, Error(StatusCode::Unavailable, "reset"));
  // Two requests reach both endpoints (ties rotate): a's first call fails and is retried on b.
  CHECK(sum_of(client) == 42);
  CHECK(sum_of(client) == 42);
  auto stats = client.stats();
  CHECK(stats.retries == 1);
  CHECK(stats.succeeded == 2);
  CHECK(stats.failed == 0);
  CHECK(a.calls() + b.calls() == 3);
}

TEST_CASE("fake: attempts stop at max_attempts, and client mistakes are never retried") {
  FakeServer a("attempts-a"), b("attempts-b");
  auto options = two_endpoints(a, b);
  options.validate_inputs = false;
  options.retry.max_attempts = 2;
  options.breaker.failures_to_eject = 100;
  Client client(options);
  for (int i = 1; i <= 2; ++i) {
    a.fail_call(i, Error(StatusCode::Unavailable, "down"));
    b.fail_call(i, Error(StatusCode::Unavailable, "down"));
  }
  auto failed = client.infer_future(simple_request(1, 1));
  CHECK_THROWS_AS(failed.get(), Error);
  CHECK(a.calls() + b.calls() == 2);

  a.fail_call(1, Error(StatusCode::InvalidArgument, "bad"));
  b.fail_call(1, Error(StatusCode::InvalidArgument, "bad"));
  try {
    (void)client.infer(simple_request(1, 1));
    FAIL("must throw");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::InvalidArgument);
  }
  CHECK(a.calls() + b.calls() == 3);  // one attempt only
}

TEST_CASE("fake: an endpoint that keeps failing is ejected, and comes back once it is ready") {
  FakeServer a("breaker-a"), b("breaker-b");
  auto options = two_endpoints(a, b);
  options.validate_inputs = false;
  options.breaker.failures_to_eject = 3;
  options.retry.max_attempts = 1;
  Client client(options);
  a.set_down(true);
  int failures = 0;
  for (int i = 0; i < 6; ++i) {
    try {
      (void)sum_of(client);
    } catch (const Error&) {
      ++failures;
    }
  }
  CHECK(failures == 3);  // a's three failures, then a is ejected
  auto before = a.calls();
  for (int i = 0; i < 10; ++i) CHECK(sum_of(client) == 42);
  CHECK(a.calls() == before);  // nothing went to the ejected endpoint
  CHECK(client.stats().endpoints[0].ejections == 1);

  a.set_down(false);  // the next probe finds it ready
  REQUIRE(eventually([&] { return client.stats().endpoints[0].healthy; }, 2s));
  CHECK(a.readiness_probes() >= 1);
  for (int i = 0; i < 10; ++i) CHECK(sum_of(client) == 42);
  CHECK(a.calls() > before);  // back in rotation
}

TEST_CASE("fake: with every endpoint down the CPU fallback answers; one log line a transition") {
  FakeServer a("fallback-a");
  std::vector<std::string> log;
  std::mutex log_mutex;
  ClientOptions options;
  options.endpoints = {a.url()};
  options.retry.max_attempts = 1;
  options.breaker.cool_down = 20ms;
  options.breaker.probe_interval = 5ms;
  options.fallback = CpuExecutor::with_models(models::builtin(), 1);
  options.log = [&](LogLevel, const std::string& line) {
    std::lock_guard<std::mutex> lock(log_mutex);
    log.push_back(line);
  };
  Client client(options);
  a.set_down(true);
  for (int i = 0; i < 5; ++i) {
    auto r = client.infer(simple_request(20, 22));
    CHECK(r.executed_on() == ExecutedOn::Local);
    CHECK(r.output("OUTPUT0").as<std::int32_t>()[0] == 42);
  }
  a.set_down(false);
  REQUIRE(eventually([&] { return client.stats().endpoints[0].healthy; }, 2s));
  CHECK(client.infer(simple_request(1, 2)).executed_on() == ExecutedOn::Remote);
  CHECK(client.stats().fallbacks == 5);
  std::lock_guard<std::mutex> lock(log_mutex);
  CHECK(std::count_if(log.begin(), log.end(), [](const std::string& line) {
          return line.find("running requests on the CPU executor") != std::string::npos;
        }) == 1);
  CHECK(std::count_if(log.begin(), log.end(), [](const std::string& line) {
          return line.find("servers answer again") != std::string::npos;
        }) == 1);
}

TEST_CASE("fake: the CPU fallback runs on the framework's scheduler when given one") {
  FakeServer a("fallback-scheduler");
  FrameworkThread framework;
  std::mutex mutex;
  std::set<std::thread::id> ran_on;  // the threads that ran the fallback's model
  Model simple = models::simple();
  simple.compute = [&, compute = simple.compute](const InferRequest& request) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      ran_on.insert(std::this_thread::get_id());
    }
    return compute(request);
  };
  ClientOptions options;
  options.endpoints = {a.url()};
  options.retry.max_attempts = 1;
  options.fallback = CpuExecutor::with_models({simple}, {1, framework.scheduler()});
  Client client(options);
  a.set_down(true);
  for (int i = 0; i < 3; ++i) {
    auto r = client.infer(simple_request(20, 22));
    CHECK(r.executed_on() == ExecutedOn::Local);
    CHECK(r.output("OUTPUT0").as<std::int32_t>()[0] == 42);
  }
  CHECK(framework.received() == 3);
  std::lock_guard<std::mutex> lock(mutex);
  CHECK(ran_on == std::set<std::thread::id>{framework.id()});
}

TEST_CASE("fake: the fallback's answers from the framework's threads reach async callbacks") {
  FakeServer a("fallback-scheduler-async");
  FrameworkThread framework;
  ClientOptions options;
  options.endpoints = {a.url()};
  options.retry.max_attempts = 1;
  options.fallback = CpuExecutor::with_models(models::builtin(), {2, framework.scheduler()});
  Client client(options);
  a.set_down(true);
  std::vector<std::promise<bool>> answers(32);
  for (auto& answer : answers) {
    client.infer_async(simple_request(20, 22), [&answer](Result<InferResult> r) {
      answer.set_value(r.ok() && r->executed_on() == ExecutedOn::Local &&
                       r->output("OUTPUT0").as<std::int32_t>()[0] == 42);
    });
  }
  for (auto& answer : answers) CHECK(answer.get_future().get());
  CHECK(framework.received() == 32);
}

TEST_CASE("fake: a result from the CPU fallback says how long its local attempt took") {
  FakeServer a("fallback-timing");
  ClientOptions options;
  options.endpoints = {a.url()};
  options.retry.max_attempts = 1;
  options.fallback = CpuExecutor::with_models(models::builtin(), 1);
  Client client(options);
  a.set_down(true);
  const auto before = std::chrono::steady_clock::now();
  InferResult result = client.infer(simple_request(20, 22));
  const auto elapsed = std::chrono::steady_clock::now() - before;
  REQUIRE(result.executed_on() == ExecutedOn::Local);
  CHECK(result.timing().total > std::chrono::nanoseconds(0));
  CHECK(result.timing().total <= elapsed);
  CHECK(result.timing().total >= result.timing().server_compute);
}

TEST_CASE("fake: when the fallback lacks the model, the error says so and what to do") {
  FakeServer a("fallback-lacks");
  ClientOptions options;
  options.endpoints = {a.url()};
  options.retry.max_attempts = 1;
  options.validate_inputs = false;
  options.fallback = CpuExecutor::with_models(models::builtin(), 1);
  Client client(options);
  a.set_down(true);
  try {
    client.infer(InferRequest("no_such_model")
                     .input("INPUT0", Tensor::from_vector(std::vector<float>(4, 1.f), {1, 4})));
    FAIL("the request should have failed");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::Unavailable);
    const std::string message = e.message();
    CHECK_MESSAGE(message.find("the CPU fallback did not run: it has no model 'no_such_model'") !=
                      std::string::npos,
                  message);
    CHECK_MESSAGE(message.find("load it into the fallback executor") != std::string::npos, message);
  }
  // Without a fallback, nothing is said of one.
  ClientOptions plain;
  plain.endpoints = {a.url()};
  plain.retry.max_attempts = 1;
  Client without(plain);
  try {
    without.infer(simple_request(1, 1));
    FAIL("the request should have failed");
  } catch (const Error& e) {
    CHECK(e.message().find("CPU fallback") == std::string::npos);
  }
}

TEST_CASE("fake: a held call is cancelled, reset, or times out, exactly once each") {
  FakeServer a("held-a");
  ClientOptions options;
  options.endpoints = {a.url()};
  options.retry.max_attempts = 1;
  Client client(options);
  a.hold();

  std::promise<StatusCode> first;
  auto handle = client.infer_async(simple_request(1, 1),
                                   [&](Result<InferResult> r) { first.set_value(r.code()); });
  REQUIRE(eventually([&] { return a.waiting() == 1; }));
  CHECK(handle.cancel());
  CHECK(first.get_future().get() == StatusCode::Cancelled);
  // The callback runs as the client cancels; the server sees the stream's reset when it
  // arrives, a moment later on a busy machine (once, never more).
  CHECK(eventually([&] { return a.cancelled() >= 1; }));
  CHECK(a.cancelled() == 1);

  auto reset = client.infer_future(simple_request(1, 1));
  REQUIRE(eventually([&] { return a.waiting() == 1; }));
  a.reset();
  try {
    (void)reset.get();
    FAIL("must throw");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::Unavailable);
  }

  auto late = client.infer_future(simple_request(1, 1).timeout(30ms));
  try {
    (void)late.get();
    FAIL("must throw");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::DeadlineExceeded);
  }

  auto released = client.infer_future(simple_request(20, 22));
  REQUIRE(eventually([&] { return a.waiting() == 1; }));
  a.release();
  CHECK(released.get().output("OUTPUT0").as<std::int32_t>()[0] == 42);
  CHECK(client.stats().requests == 4);
}

TEST_CASE("fake: a model one server lacks goes to the one that has it") {
  auto only_simple = CpuExecutor::with_models({models::simple()}, 1);
  FakeServer a("models-a", only_simple), b("models-b");
  auto options = two_endpoints(a, b);
  Client client(options);
  std::vector<float> x(4, 1.0f);
  for (int i = 0; i < 4; ++i) {
    auto r = client.infer(InferRequest("identity_fp32").input("INPUT0", Tensor::view(x, {1, 4})));
    CHECK(r.output("OUTPUT0").as<float>()[3] == 1.0f);
  }
}

// Transports complete calls later, on threads of their own (the fake too); the client decides
// some outcomes inside infer_async itself (a request it refuses before sending): neither reaches
// a callback inside the caller's call, whatever thread callbacks run on.
TEST_CASE("fake: a callback never runs inside infer_async, whatever decided its outcome") {
  FakeServer a("inline-a");
  for (auto where : {CallbackThread::Network, CallbackThread::Pool, CallbackThread::Inline}) {
    ClientOptions options;
    options.endpoints = {a.url()};
    options.validate_inputs = false;
    options.callbacks = where;
    Client client(options);
    for (bool refused : {false, true}) {
      std::atomic<bool> inside{false}, ran_inside{false};
      const auto caller = std::this_thread::get_id();
      std::promise<bool> done;
      InferRequest request = simple_request(1, 2);
      if (refused) request = InferRequest("");  // no model name: refused before any attempt
      inside = true;
      client.infer_async(std::move(request), [&](Result<InferResult> result) {
        ran_inside = inside.load() && std::this_thread::get_id() == caller;
        done.set_value(result.ok());
      });
      inside = false;
      CHECK(done.get_future().get() == !refused);
      CHECK_FALSE(ran_inside.load());
    }
  }
}

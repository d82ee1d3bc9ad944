// Interop: what an overloaded server says over the stock gRPC stack, heeded by sonic's client.
// python_server.py started with --refuse-infer refuses every ModelInfer as an overloaded server
// does (and counts each refusal as a failure in the model's statistics, so that the attempts
// that reached it are counted there): plain UNAVAILABLE, sonic's early refusal (UNAVAILABLE with
// a google.rpc.ErrorInfo reason WOULD_MISS_DEADLINE in grpc-status-details-bin), or
// RESOURCE_EXHAUSTED with gRPC's grpc-retry-pushback-ms trailer. The plain server's `slow` model
// gives up when its call is cancelled, which shows a hedge's loser reset on the wire.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <sonic/builtin_models.hpp>
#include <sonic/executor.hpp>
#include <sonic/sonic.hpp>

#include "eventually.hpp"
#include "python_server.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// A python_server.py of its own, refusing every inference as `refusal` says.
struct RefusingServer {
  explicit RefusingServer(const std::string& refusal)
      : child(sonic::test::start_python_server({"--refuse-infer", refusal})),
        url("grpc://127.0.0.1:" + std::to_string(child->port())) {}

  // The inference calls that reached it (each one refused and counted as a failure).
  std::uint64_t refused(const std::string& model = "simple") const {
    return sonic::Client(url).model_statistics(model).at(0).fail.count;
  }

  std::unique_ptr<sonic::test::ChildServer> child;
  std::string url;
};

sonic::InferRequest simple_request() {
  return sonic::InferRequest("simple")
      .input("INPUT0", sonic::Tensor::from_vector(std::vector<std::int32_t>(16, 20), {1, 16}))
      .input("INPUT1", sonic::Tensor::from_vector(std::vector<std::int32_t>(16, 22), {1, 16}));
}

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// The CPU fallback's `slow`: the server's identity, at once.
std::shared_ptr<sonic::CpuExecutor> local_slow_model() {
  sonic::Model slow;
  slow.name = "slow";
  slow.inputs = {{"INPUT0", sonic::DataType::Fp32, {-1, -1}}};
  slow.outputs = {{"OUTPUT0", sonic::DataType::Fp32, {-1, -1}}};
  slow.compute =
      [](const sonic::InferRequest& request) -> sonic::Result<std::vector<sonic::NamedTensor>> {
    return std::vector<sonic::NamedTensor>{
        {"OUTPUT0", request.find_input("INPUT0")->tensor.to_owned(), {}}};
  };
  auto local = std::make_shared<sonic::CpuExecutor>(1);
  local->add_model(std::move(slow));
  return local;
}

}  // namespace

TEST_SUITE("interop: sonic client vs python server, overloaded") {
  TEST_CASE("the retry budget holds under a server that refuses everything") {
    RefusingServer server("unavailable");
    sonic::ClientOptions options;
    options.retry.max_attempts = 5;
    options.retry.initial_backoff = 1ms;
    sonic::Client client(server.url, options);
    constexpr int kRequests = 150;
    for (int i = 0; i < kRequests; ++i) {
      auto outcome = client.infer_future(simple_request().timeout(30s));
      CHECK_THROWS_AS((void)outcome.get(), sonic::Error);
    }
    // Without a budget: 5 attempts each, 750. With the default one (100 tokens, 0.1 a success,
    // retries while more than 50 are left): the first requests' 40 retries, then none.
    const auto& budget = options.retry.budget;
    const auto reached = server.refused();
    CHECK_MESSAGE(reached <= kRequests * (1 + budget.token_ratio) + budget.max_tokens / 2,
                  reached << " attempts reached the server");
    CHECK(reached >= kRequests);
    CHECK(client.stats().throttled_retries >= kRequests - budget.max_tokens / 2);
  }

  TEST_CASE("an early refusal (WOULD_MISS_DEADLINE) goes to the other endpoint at once") {
    RefusingServer refusing("would-miss-deadline");
    sonic::ClientOptions options;
    options.endpoints = {refusing.url, sonic::test::server_url()};
    options.retry.initial_backoff = 2s;     // a request that waited one would show it
    options.breaker.failures_to_eject = 1;  // an ordinary UNAVAILABLE would eject at once
    options.default_timeout = 10s;
    sonic::Client client(options);
    for (int i = 0; i < 6; ++i) {
      const auto start = Clock::now();
      auto result = client.infer(simple_request());
      CHECK(result.output("OUTPUT0").as<std::int32_t>()[0] == 42);
      CHECK(ms_since(start) < 1000);
    }
    const auto reached = refusing.refused();
    CHECK(reached >= 1);  // requests took turns: some went there first
    const auto stats = client.stats();
    CHECK(stats.endpoints[0].refusals == reached);
    CHECK(stats.endpoints[0].ejections == 0);
    CHECK(stats.endpoints[0].healthy);
  }

  TEST_CASE("an early refusal goes to the fallback at once when no endpoint is left") {
    RefusingServer refusing("would-miss-deadline");
    sonic::ClientOptions options;
    options.retry.initial_backoff = 2s;
    options.fallback = sonic::CpuExecutor::with_models(sonic::models::builtin(), 1);
    options.default_timeout = 10s;
    sonic::Client client(refusing.url, options);
    const auto start = Clock::now();
    auto result = client.infer(simple_request());
    CHECK(result.executed_on() == sonic::ExecutedOn::Local);
    CHECK(ms_since(start) < 1000);
    CHECK(refusing.refused() == 1);
  }

  TEST_CASE("grpc-retry-pushback-ms: no attempt on that server before the pushback has passed") {
    RefusingServer pushing("pushback=400");
    sonic::ClientOptions options;
    options.retry.retryable_codes = {sonic::StatusCode::Unavailable,
                                     sonic::StatusCode::ResourceExhausted};
    options.retry.initial_backoff = 1ms;
    options.retry.max_attempts = 3;
    sonic::Client client(pushing.url, options);
    const auto start = Clock::now();
    try {
      (void)client.infer(simple_request().timeout(10s));
      FAIL("the server refuses everything");
    } catch (const sonic::Error& e) {
      CHECK(e.code() == sonic::StatusCode::ResourceExhausted);
      CHECK(e.pushback() == std::chrono::milliseconds(400));
    }
    CHECK(ms_since(start) >= 795);  // three attempts, 400 ms apart at least
    CHECK(pushing.refused() == 3);
    CHECK(client.stats().endpoints[0].pushbacks == 3);
  }

  TEST_CASE("grpc-retry-pushback-ms that is not a non-negative integer: not retried") {
    RefusingServer never("pushback=never");
    sonic::ClientOptions options;
    options.retry.retryable_codes = {sonic::StatusCode::ResourceExhausted};
    sonic::Client client(never.url, options);
    try {
      (void)client.infer(simple_request().timeout(10s));
      FAIL("the server refuses everything");
    } catch (const sonic::Error& e) {
      CHECK(e.pushback() == sonic::Error::kNoRetry);
    }
    CHECK(never.refused() == 1);
  }

  TEST_CASE("a hedge's loser is cancelled on the wire: the server's slow model gives up") {
    sonic::ClientOptions options;
    options.fallback = local_slow_model();
    options.fallback_latency_budget = 200ms;
    sonic::Client client(sonic::test::server_url(), options);
    auto before = client.model_statistics("slow").at(0);
    std::vector<float> x = {1.0f, 2.0f, 3.0f, 4.0f};
    const auto start = Clock::now();
    auto result = client.infer(
        sonic::InferRequest("slow").input("INPUT0", sonic::Tensor::view(x, {1, 4})).timeout(10s));
    CHECK(result.executed_on() == sonic::ExecutedOn::Local);
    CHECK(ms_since(start) < 1500);  // the winner does not wait for the loser's 2 s
    // The model sleeps 2 s unless its call is cancelled: the reset reaches it within its next
    // look (every 50 ms), and it fails instead of finishing for no one.
    CHECK(sonic::test::eventually(
        [&] { return client.model_statistics("slow").at(0).fail.count == before.fail.count + 1; },
        1500ms));
    std::this_thread::sleep_for(2s);
    CHECK(client.model_statistics("slow").at(0).success.count == before.success.count);
  }
}

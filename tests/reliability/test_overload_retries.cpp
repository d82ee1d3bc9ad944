// The client never turns a server's overload into more load: the retry budget (gRPC's retry
// throttling), server pushback, and early refusals (WOULD_MISS_DEADLINE) moved elsewhere at once,
// step by step against fake:// servers that refuse exactly as the test says.
#include <doctest/doctest.h>

#include <sonic/builtin_models.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "eventually.hpp"
#include "fake_transport.hpp"
#include "protocol/names.hpp"
#include "simple_request.hpp"

using namespace sonic;
using namespace sonic::test;
using namespace std::chrono_literals;

namespace {

// Options for fake endpoints: no input validation (every call is an inference call), no
// backoff to wait out, and a breaker that never ejects unless the test says so.
ClientOptions options_for(std::vector<std::string> endpoints) {
  ClientOptions options;
  options.endpoints = std::move(endpoints);
  options.validate_inputs = false;
  options.retry.initial_backoff = 0ms;
  options.retry.max_attempts = 5;
  options.breaker.failures_to_eject = 1'000'000;
  return options;
}

Error overloaded() { return Error(StatusCode::Unavailable, "the server is overloaded"); }

Error would_miss_deadline() {
  return Error(StatusCode::Unavailable, "the queue ahead is longer than the request's deadline",
               std::string(protocol::reason::kWouldMissDeadline));
}

Error pushed_back(std::chrono::milliseconds delay,
                  StatusCode code = StatusCode::ResourceExhausted) {
  Error error(code, "slow down");
  error.set_pushback(delay);
  return error;
}

// The outcome of one request, waited for.
Result<InferResult> outcome_of(Client& client, InferRequest request) {
  std::promise<Result<InferResult>> done;
  client.infer_async(std::move(request),
                     [&](Result<InferResult> r) { done.set_value(std::move(r)); });
  return done.get_future().get();
}

const EndpointStats& stats_of(const ClientStats& stats, const std::string& url) {
  for (const auto& e : stats.endpoints) {
    if (e.url == url) return e;
  }
  FAIL("no endpoint " << url);
  return stats.endpoints.front();
}

}  // namespace

TEST_CASE("retry budget: a server that refuses everything sees requests, not retries") {
  FakeServer a("budget-refuses-all");
  a.refuse_calls(overloaded());
  auto options = options_for({a.url()});
  Client client(options);
  constexpr std::size_t kRequests = 200;
  std::size_t failed = 0;
  for (std::size_t i = 0; i < kRequests; ++i) failed += !outcome_of(client, simple_request(1, 2));
  CHECK(failed == kRequests);
  // gRFC A6's bucket: 100 tokens, retries while more than 50 are left, no success to refill it.
  // Without it, each request would have made max_attempts (5) attempts: 1,000.
  const auto& budget = options.retry.budget;
  const double bound = kRequests * (1 + budget.token_ratio) + budget.max_tokens / 2;
  CHECK_MESSAGE(a.calls() <= bound, a.calls() << " attempts for " << kRequests << " requests");
  CHECK(a.calls() >= kRequests);
  const ClientStats stats = client.stats();
  CHECK(stats.retries == a.calls() - kRequests);
  CHECK(stats.throttled_retries >= kRequests - budget.max_tokens / 2);
  CHECK(stats_of(stats, a.url()).retry_tokens <= budget.max_tokens / 2);
}

TEST_CASE("retry budget: refused retries go to the fallback, which loads no server") {
  FakeServer a("budget-fallback-a"), b("budget-fallback-b");
  a.refuse_calls(overloaded());
  b.refuse_calls(overloaded());
  auto options = options_for({a.url(), b.url()});
  options.fallback = CpuExecutor::with_models(models::builtin(), 1);
  Client client(options);
  constexpr std::size_t kRequests = 100;
  for (std::size_t i = 0; i < kRequests; ++i) {
    auto result = outcome_of(client, simple_request(20, 22));
    REQUIRE(result);
    CHECK(result->executed_on() == ExecutedOn::Local);
  }
  // Each endpoint's bucket allows its burst of retries, then none: the rest run locally at
  // once (without the budget: 500 attempts).
  CHECK(a.calls() + b.calls() <= kRequests + 2 * options.retry.budget.max_tokens / 2);
  CHECK(client.stats().fallbacks == kRequests);
  CHECK(client.stats().throttled_retries >= kRequests - options.retry.budget.max_tokens / 2);
}

TEST_CASE("retry budget: a healthy endpoint still takes the retries of a failing one") {
  FakeServer a("budget-healthy-a"), b("budget-healthy-b");
  a.refuse_calls(overloaded());
  Client client(options_for({a.url(), b.url()}));
  constexpr std::size_t kRequests = 100;
  for (std::size_t i = 0; i < kRequests; ++i) {
    auto result = outcome_of(client, simple_request(20, 22));
    REQUIRE_MESSAGE(result, result.error().what());
  }
  // a's bucket is spent, so no retry goes back to it; b's stays full, so a's failures move on.
  const ClientStats stats = client.stats();
  CHECK(b.calls() == kRequests);
  CHECK(stats.throttled_retries == 0);
  CHECK(stats_of(stats, a.url()).retry_tokens <= 50.0);
  CHECK(stats_of(stats, b.url()).retry_tokens == 100.0);
}

TEST_CASE("retry budget: successes earn retries back, one per 1 / token_ratio") {
  FakeServer a("budget-refill");
  auto options = options_for({a.url()});
  options.retry.max_attempts = 2;
  options.retry.budget.max_tokens = 10;  // gRPC's examples' bucket: round numbers below
  Client client(options);
  a.refuse_calls(overloaded());
  for (int i = 0; i < 20; ++i) CHECK_FALSE(outcome_of(client, simple_request(1, 2)));
  a.refuse_calls(std::nullopt);
  for (int i = 0; i < 70; ++i) CHECK(outcome_of(client, simple_request(1, 2)));
  // 0 tokens after the failures (each takes one, floored at 0), + 7 from 70 successes. The next
  // failure leaves 6, above half: one retry; its failure leaves 5, and the next failure 4: none.
  CHECK(stats_of(client.stats(), a.url()).retry_tokens == doctest::Approx(7.0));
  a.refuse_calls(overloaded());
  const std::size_t before = a.calls();
  CHECK_FALSE(outcome_of(client, simple_request(1, 2)));
  CHECK_FALSE(outcome_of(client, simple_request(1, 2)));
  CHECK(a.calls() - before == 3);  // two requests, one retry
}

TEST_CASE("retry budget: max_tokens 0 turns throttling off") {
  FakeServer a("budget-off");
  a.refuse_calls(overloaded());
  auto options = options_for({a.url()});
  options.retry.budget.max_tokens = 0;
  Client client(options);
  for (int i = 0; i < 10; ++i) CHECK_FALSE(outcome_of(client, simple_request(1, 2)));
  CHECK(a.calls() == 10 * 5);
  CHECK(client.stats().throttled_retries == 0);
}

TEST_CASE("retry budget: a request that never left the client is retried outside it") {
  FakeServer a("budget-never-sent");
  Error unreachable(StatusCode::Unavailable, "cannot connect to the server");
  a.refuse_calls(unreachable.set_never_sent());
  Client client(options_for({a.url()}));
  for (int i = 0; i < 20; ++i) CHECK_FALSE(outcome_of(client, simple_request(1, 2)));
  // As gRPC's transparent retries: no token taken, none needed. Each request made its 5
  // attempts (max_attempts still counts them).
  CHECK(a.calls() == 20 * 5);
  CHECK(client.stats().throttled_retries == 0);
  CHECK(stats_of(client.stats(), a.url()).retry_tokens == 100.0);
}

TEST_CASE("pushback: the next attempt on that endpoint waits until the pushback has passed") {
  FakeServer a("pushback-one");
  auto options = options_for({a.url()});
  options.retry.retryable_codes = {StatusCode::Unavailable, StatusCode::ResourceExhausted};
  Client client(options);
  a.fail_call(1, pushed_back(300ms));
  auto result = outcome_of(client, simple_request(20, 22).timeout(5s));
  REQUIRE(result);
  const auto times = a.call_times();
  REQUIRE(times.size() == 2);
  CHECK(ms_between(times[0], times[1]) >= 295);  // without pushback: no backoff at all
  CHECK(stats_of(client.stats(), a.url()).pushbacks == 1);
  CHECK(stats_of(client.stats(), a.url()).healthy);

  // A pause past the request's deadline: it fails now rather than wait for nothing.
  a.fail_call(1, pushed_back(2s));
  const auto start = Clock::now();
  auto late = outcome_of(client, simple_request(20, 22).timeout(300ms));
  CHECK_FALSE(late);
  CHECK(ms_since(start) < 250);
  CHECK(a.calls() == 3);
}

TEST_CASE("pushback: other endpoints take the requests while one is paused") {
  FakeServer a("pushback-a"), b("pushback-b");
  Client client(options_for({a.url(), b.url()}));
  a.fail_call(1, pushed_back(400ms, StatusCode::Unavailable));
  // Requests take turns at the endpoints; the first to reach a is pushed back, and retried on b.
  for (int i = 0; i < 4 && a.calls() == 0; ++i) REQUIRE(outcome_of(client, simple_request(1, 2)));
  REQUIRE(a.calls() == 1);
  const Clock::time_point paused_at = a.call_times().front();
  int sent = 0;
  while (ms_since(paused_at) < 300) {
    REQUIRE(outcome_of(client, simple_request(1, 2)));
    ++sent;
  }
  CHECK(sent > 0);
  if (ms_since(paused_at) < 380) CHECK(a.calls() == 1);  // b took every one of them
  std::this_thread::sleep_for(std::chrono::milliseconds(420) - (Clock::now() - paused_at));
  for (int i = 0; i < 4; ++i) REQUIRE(outcome_of(client, simple_request(1, 2)));
  REQUIRE(a.calls() > 1);  // back in turn once its pause is over
  CHECK(ms_between(paused_at, a.call_times()[1]) >= 399);
  // A server that asks for a pause is busy, not broken: no ejection.
  CHECK(stats_of(client.stats(), a.url()).ejections == 0);
  CHECK(stats_of(client.stats(), a.url()).pushbacks == 1);
}

TEST_CASE("pushback: with a fallback, requests run locally while the only endpoint is paused") {
  FakeServer a("pushback-fallback");
  auto options = options_for({a.url()});
  options.fallback = CpuExecutor::with_models(models::builtin(), 1);
  Client client(options);
  a.fail_call(1, pushed_back(500ms, StatusCode::Unavailable));
  const auto start = Clock::now();
  auto first = outcome_of(client, simple_request(1, 2));
  REQUIRE(first);
  CHECK(first->executed_on() == ExecutedOn::Local);
  for (int i = 0; i < 5; ++i) {
    auto r = outcome_of(client, simple_request(1, 2));
    REQUIRE(r);
    if (ms_since(start) < 450) CHECK(r->executed_on() == ExecutedOn::Local);
  }
  if (ms_since(start) < 450) CHECK(a.calls() == 1);
  std::this_thread::sleep_for(500ms);
  auto later = outcome_of(client, simple_request(1, 2));
  REQUIRE(later);
  CHECK(later->executed_on() == ExecutedOn::Remote);
}

TEST_CASE("pushback: a value that is not a non-negative integer means do not retry") {
  FakeServer a("pushback-never");
  Client client(options_for({a.url()}));
  a.fail_call(1, pushed_back(Error::kNoRetry, StatusCode::Unavailable));
  auto result = outcome_of(client, simple_request(1, 2));
  REQUIRE_FALSE(result);
  CHECK(result.error().pushback() == Error::kNoRetry);
  CHECK(a.calls() == 1);
  // It pauses nothing: the next request goes at once.
  CHECK(outcome_of(client, simple_request(1, 2)));
}

TEST_CASE("early refusal: the next endpoint at once, no backoff, no ejection") {
  FakeServer a("refusal-a"), b("refusal-b");
  auto options = options_for({a.url(), b.url()});
  options.retry.initial_backoff = 2s;  // a request that waited one would show it
  options.breaker.failures_to_eject = 1;
  Client client(options);
  a.refuse_calls(would_miss_deadline());
  for (int i = 0; i < 6; ++i) {
    const auto start = Clock::now();
    auto result = outcome_of(client, simple_request(20, 22).timeout(5s));
    REQUIRE_MESSAGE(result, result.error().what());
    CHECK(ms_since(start) < 500);
  }
  const ClientStats stats = client.stats();
  const auto& refusing = stats_of(stats, a.url());
  CHECK(refusing.refusals >= 1);
  CHECK(refusing.refusals == a.calls());
  CHECK(refusing.ejections == 0);
  CHECK(refusing.healthy);
  CHECK(b.calls() == 6);
}

TEST_CASE("early refusal: the fallback at once when no endpoint is left") {
  FakeServer a("refusal-fallback-a"), b("refusal-fallback-b");
  auto options = options_for({a.url(), b.url()});
  options.retry.initial_backoff = 2s;
  options.fallback = CpuExecutor::with_models(models::builtin(), 1);
  Client client(options);
  a.refuse_calls(would_miss_deadline());
  b.refuse_calls(would_miss_deadline());
  const auto start = Clock::now();
  auto result = outcome_of(client, simple_request(20, 22).timeout(5s));
  REQUIRE(result);
  CHECK(result->executed_on() == ExecutedOn::Local);
  CHECK(ms_since(start) < 500);
  CHECK(a.calls() == 1);  // each endpoint refused it once, and was not asked again
  CHECK(b.calls() == 1);
}

TEST_CASE("early refusal: without a fallback or another endpoint, the refusal at once") {
  FakeServer a("refusal-alone");
  auto options = options_for({a.url()});
  options.retry.initial_backoff = 2s;
  Client client(options);
  a.refuse_calls(would_miss_deadline());
  const auto start = Clock::now();
  auto result = outcome_of(client, simple_request(20, 22).timeout(5s));
  REQUIRE_FALSE(result);
  CHECK(result.error().reason() == protocol::reason::kWouldMissDeadline);
  CHECK(ms_since(start) < 500);
  CHECK(a.calls() == 1);  // the server said it cannot make the deadline: not asked again
}

TEST_CASE("early refusal against a per-attempt timeout: the next attempt has the whole deadline") {
  // The server could not answer within the attempt's 100 ms, but the request has 5 s: the next
  // attempt, here on the same server (there is no other), has all of them; a second refusal
  // is final.
  FakeServer a("refusal-attempt");
  auto options = options_for({a.url()});
  options.retry.per_attempt_timeout = 100ms;
  Client client(options);
  a.fail_call(1, would_miss_deadline());
  auto result = outcome_of(client, simple_request(20, 22).timeout(5s));
  REQUIRE(result);
  CHECK(a.calls() == 2);
  a.refuse_calls(would_miss_deadline());
  auto refused = outcome_of(client, simple_request(20, 22).timeout(5s));
  REQUIRE_FALSE(refused);
  CHECK(refused.error().reason() == protocol::reason::kWouldMissDeadline);
  CHECK(a.calls() == 4);
}

TEST_CASE("fallback: a request whose deadline passes while it waits there never runs") {
  FakeServer a("fallback-deadline");
  a.refuse_calls(would_miss_deadline());
  // The fallback's one thread is held by the first request until the test opens it.
  std::promise<void> open;
  std::shared_future<void> opened = open.get_future().share();
  auto runs = std::make_shared<std::atomic<int>>(0);
  Model gated;
  gated.name = "gated";
  gated.inputs = {{"INPUT0", DataType::Fp32, Shape{-1}}};
  gated.outputs = {{"OUTPUT0", DataType::Fp32, Shape{-1}}};
  gated.compute = [opened, runs](const InferRequest& request) -> Result<std::vector<NamedTensor>> {
    ++*runs;
    opened.wait();
    return std::vector<NamedTensor>{{"OUTPUT0", request.find_input("INPUT0")->tensor, {}}};
  };
  auto fallback = CpuExecutor::with_models({gated}, 1);
  auto options = options_for({a.url()});
  options.fallback = fallback;
  Client client(options);
  auto request = [] {
    return InferRequest("gated").input("INPUT0",
                                       Tensor::from_vector(std::vector<float>{1}, Shape{1}));
  };
  auto first = client.infer_future(request());
  REQUIRE(eventually([&] { return runs->load() == 1; }));
  auto late = client.infer_future(request().timeout(100ms));
  CHECK_THROWS_AS(late.get(), Error);  // DEADLINE_EXCEEDED, at 100 ms
  open.set_value();
  CHECK(first.get().executed_on() == ExecutedOn::Local);
  // Answered unrun once its deadline had passed: the model ran for the first request only.
  CHECK(eventually([&] { return fallback->statistics("gated").value().failures.canceled == 1; }));
  CHECK(runs->load() == 1);
  CHECK(fallback->statistics("gated").value().execution_count == 1);
}

TEST_CASE("fallback: a request it would answer too late is refused at once, not queued") {
  FakeServer a("fallback-in-time");
  a.refuse_calls(would_miss_deadline());
  Model slow;  // 30 ms an execution, one at a time
  slow.name = "slow";
  slow.inputs = {{"INPUT0", DataType::Fp32, Shape{-1}}};
  slow.outputs = {{"OUTPUT0", DataType::Fp32, Shape{-1}}};
  slow.compute = [](const InferRequest& request) -> Result<std::vector<NamedTensor>> {
    std::this_thread::sleep_for(30ms);
    return std::vector<NamedTensor>{{"OUTPUT0", request.find_input("INPUT0")->tensor, {}}};
  };
  auto fallback = CpuExecutor::with_models({slow}, 1);
  auto options = options_for({a.url()});
  options.fallback = fallback;
  Client client(options);
  auto request = [] {
    return InferRequest("slow").input("INPUT0",
                                      Tensor::from_vector(std::vector<float>{1}, Shape{1}));
  };
  REQUIRE(outcome_of(client, request()));  // it has run once: its execution time is known
  std::vector<std::future<InferResult>> ahead;
  for (int i = 0; i < 5; ++i) ahead.push_back(client.infer_future(request()));
  REQUIRE(eventually([&] { return fallback->statistics("slow").value().execution_count >= 2; }));
  // Five under way, 30 ms each: one with 100 ms left cannot be answered in time.
  const auto sent = Clock::now();
  auto hurried = outcome_of(client, request().timeout(100ms));
  REQUIRE_FALSE(hurried);
  CHECK(ms_since(sent) < 50);  // at once, not at its deadline
  CHECK(hurried.code() == StatusCode::Unavailable);
  CHECK(hurried.error().reason() == protocol::reason::kWouldMissDeadline);
  CHECK(hurried.error().message().find("CPU fallback") != std::string::npos);
  for (auto& f : ahead) CHECK(f.get().executed_on() == ExecutedOn::Local);
  CHECK(fallback->statistics("slow").value().failures.rejected == 1);
}

// Routing over several real servers (ClientOptions::routing): discovery follows a model that
// moves between servers, a preferred endpoint takes its model's requests while it can, power
// of two choices favours the faster server, and pinned models never answer from another
// version or configuration.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "eventually.hpp"
#include "loopback_server.hpp"

using namespace sonic;
using namespace sonic::test;
using namespace std::chrono_literals;

namespace {

std::unique_ptr<LoopbackServer> server_of(std::vector<Model> models) {
  return std::make_unique<LoopbackServer>(CpuExecutor::with_models(std::move(models), 2),
                                          ServerOptions{});
}

std::uint64_t attempts(const Client& client, std::size_t endpoint) {
  return client.stats().endpoints.at(endpoint).attempts;
}

void send_simple(Client& client, int count) {
  for (int i = 0; i < count; ++i) {
    CHECK(client.infer(simple_request(i, 1)).output("OUTPUT0").as<std::int32_t>()[0] == i + 1);
  }
}

// An FP32 identity named "work" that takes `delay` per request.
Model work(std::chrono::milliseconds delay) {
  return models::identity("work", DataType::Fp32, delay);
}

}  // namespace

TEST_CASE("discovery sends a model only where it is ready, and follows it to another server") {
  auto here = CpuExecutor::with_models({models::simple()}, 2);
  auto there = CpuExecutor::with_models({work(0ms)}, 2);
  LoopbackServer a(here, {}), b(there, {});
  ClientOptions options;
  options.endpoints = {a.url(), b.url()};
  options.routing.discovery_interval = 50ms;
  Client client(options);
  std::this_thread::sleep_for(300ms);  // the first rounds of discovery
  send_simple(client, 30);
  CHECK(attempts(client, 1) == 0);

  // The model moves: unloaded here, added there. After the next round, no request fails.
  REQUIRE(here->unload_model("simple").ok());
  there->add_model(models::simple());
  std::this_thread::sleep_for(300ms);
  const auto before = attempts(client, 0);
  send_simple(client, 30);
  CHECK(attempts(client, 0) == before);
  CHECK(client.stats().failed == 0);
}

TEST_CASE("a NOT_FOUND makes discovery ask again at once") {
  auto here = CpuExecutor::with_models({models::simple()}, 2);
  auto there = CpuExecutor::with_models({work(0ms)}, 2);
  LoopbackServer a(here, {}), b(there, {});
  ClientOptions options;
  options.endpoints = {a.url(), b.url()};
  options.routing.discovery_interval =
      std::chrono::hours(1);  // only the first round, and on demand
  Client client(options);
  std::this_thread::sleep_for(200ms);
  send_simple(client, 5);
  REQUIRE(here->unload_model("simple").ok());
  there->add_model(models::simple());
  std::this_thread::sleep_for(1100ms);  // rediscovery is rate-limited to one a second
  send_simple(client, 1);               // NOT_FOUND at a, answered by b, and discovery asks again
  REQUIRE(eventually([&] {
    const auto before = attempts(client, 0);
    send_simple(client, 5);
    return attempts(client, 0) == before;
  }));
  CHECK(client.stats().failed == 0);
}

TEST_CASE("a preferred endpoint takes its model's requests while it is in rotation") {
  auto a = server_of({models::simple()});
  auto b = server_of({models::simple()});
  ClientOptions options;
  options.endpoints = {a->url(), b->url()};
  options.routing.preferred["simple"] = {b->url()};
  Client client(options);
  send_simple(client, 40);
  CHECK(attempts(client, 0) == 0);
  CHECK(attempts(client, 1) == 40);
  b->stop();
  send_simple(client, 10);  // the first attempts fail at b, retried at a
  CHECK(attempts(client, 0) >= 10);
  CHECK(client.stats().failed == 0);
}

TEST_CASE("ties take turns over the endpoints in rotation, whichever are out") {
  // Three endpoints, the model's preferred one down and ejected: the other two must take
  // turns. The rotation once moved on for each pass of a pick (the preferred endpoints, then
  // the rest), and the scan began at a fixed place, so the endpoint after one that is out got
  // its turns too: one server took twice the other's share.
  auto a = server_of({models::simple()});
  auto b = server_of({models::simple()});
  auto c = server_of({models::simple()});
  ClientOptions options;
  options.endpoints = {a->url(), b->url(), c->url()};
  options.routing.preferred["simple"] = {c->url()};
  options.breaker.failures_to_eject = 1;
  c->stop();
  Client client(options);
  REQUIRE(eventually([&] {
    send_simple(client, 1);  // c fails once, and that request is retried at a or b
    return !client.stats().endpoints.at(2).healthy;
  }));
  const auto a_before = attempts(client, 0), b_before = attempts(client, 1);
  send_simple(client, 30);
  CHECK(attempts(client, 0) - a_before == 15);
  CHECK(attempts(client, 1) - b_before == 15);
  CHECK(client.stats().failed == 0);
}

TEST_CASE("power of two choices sends most requests to the faster server") {
  auto slow = server_of({work(20ms)});
  auto fast = server_of({work(0ms)});
  ClientOptions options;
  options.endpoints = {slow->url(), fast->url()};
  options.routing.balancing = Balancing::PowerOfTwoChoices;
  Client client(options);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        client.infer(InferRequest("work").input(
            "INPUT0", Tensor::from_vector(std::vector<float>(4, 1.0f), {1, 4})));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CAPTURE(attempts(client, 0));
  CAPTURE(attempts(client, 1));
  CHECK(attempts(client, 1) > 4 * attempts(client, 0));
}

TEST_CASE("a pinned version is asked for, and another one refused") {
  Model v1 = models::simple(), v2 = models::simple();
  v2.version = "2";
  auto server = server_of({v1, v2});
  ClientOptions options;
  options.endpoints = {server->url()};
  options.routing.pins["simple"].version = "1";
  Client client(options);
  CHECK(client.infer(simple_request(1, 1)).model_version() == "1");
  try {
    client.infer(simple_request(1, 1).version("2"));
    FAIL("a request for another version than the pinned one went through");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::FailedPrecondition);
    CHECK(std::string(e.message()).find("pinned to version 1") != std::string::npos);
  }
}

TEST_CASE("a pinned configuration keeps requests off servers that report another one") {
  Model other = models::simple();
  other.max_batch_size = 4;  // the same name, another configuration
  auto right = server_of({models::simple()});
  auto wrong = server_of({other});
  const std::string checksum = model_config_checksum(Client(right->url()).model_config("simple"));
  CHECK(checksum != model_config_checksum(Client(wrong->url()).model_config("simple")));

  ClientOptions options;
  options.endpoints = {wrong->url(), right->url()};
  options.routing.pins["simple"].config_checksum = checksum;
  options.retry.max_attempts = 1;
  Client client(options);
  send_simple(client, 20);  // the first ones wait for the configurations to be reported
  CHECK(attempts(client, 0) == 0);
  CHECK(attempts(client, 1) == 20);

  right->stop();
  try {
    for (int i = 0; i < 5; ++i) client.infer(simple_request(1, 1));
    FAIL("an answer came from a server with another configuration");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::Unavailable);
  }
  CHECK(attempts(client, 0) == 0);
}

TEST_CASE("a pinned model no endpoint serves fails within the control timeout, naming why") {
  Model other = models::simple();
  other.max_batch_size = 8;
  auto wrong = server_of({other});
  auto without = server_of({work(0ms)});
  ClientOptions options;
  options.endpoints = {wrong->url(), without->url()};
  options.routing.pins["simple"].config_checksum = "0123456789abcdef";
  options.control_timeout = 1s;
  Client client(options);  // no request deadline: only the wait for discovery bounds it
  const auto start = std::chrono::steady_clock::now();
  try {
    client.infer(simple_request(1, 1));
    FAIL("a request went to a server with another configuration");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::Unavailable);
    CHECK(std::string(e.message()).find("pinned 0123456789abcdef") != std::string::npos);
  }
  CHECK(ms_since(start) < 3000);
}

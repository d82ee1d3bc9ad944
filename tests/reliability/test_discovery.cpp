// Model discovery (ClientOptions::routing) step by step against fake:// servers: an endpoint
// that refuses RepositoryIndex, as SuperSONIC's proxy does when its servers are overloaded,
// takes no requests until it answers again, and when none answers, the fallback takes them.
#include <doctest/doctest.h>

#include <sonic/builtin_models.hpp>

#include <chrono>

#include "eventually.hpp"
#include "fake_transport.hpp"
#include "loopback_server.hpp"

using namespace sonic;
using namespace sonic::test;
using namespace std::chrono_literals;

namespace {

ClientOptions discovering(std::vector<std::string> endpoints) {
  ClientOptions options;
  options.endpoints = std::move(endpoints);
  options.routing.discovery_interval = 20ms;
  return options;
}

}  // namespace

TEST_CASE("an endpoint that refuses discovery takes no requests until it answers again") {
  FakeServer busy("discovery-busy"), calm("discovery-calm");
  busy.refuse_discovery(Error(StatusCode::ResourceExhausted, "servers overloaded"));
  Client client(discovering({busy.url(), calm.url()}));
  REQUIRE(eventually([&] { return busy.discovery_calls() > 1 && calm.discovery_calls() > 1; }));
  for (int i = 0; i < 20; ++i)
    CHECK(client.infer(simple_request(1, 2)).executed_on() == ExecutedOn::Remote);
  CHECK(busy.calls() == 0);
  CHECK(calm.calls() == 20);

  busy.refuse_discovery(std::nullopt);
  const auto asked = busy.discovery_calls();
  REQUIRE(eventually([&] { return busy.discovery_calls() > asked + 1; }));
  for (int i = 0; i < 20; ++i) client.infer(simple_request(1, 2));
  CHECK(busy.calls() > 0);
}

TEST_CASE("when every endpoint refuses discovery, the fallback takes the requests") {
  FakeServer a("discovery-a"), b("discovery-b");
  for (auto* server : {&a, &b}) {
    server->refuse_discovery(Error(StatusCode::Unavailable, "no capacity"));
  }
  ClientOptions options = discovering({a.url(), b.url()});
  options.fallback = CpuExecutor::with_models({models::simple()}, 1);
  Client client(options);
  REQUIRE(eventually([&] { return a.discovery_calls() > 1 && b.discovery_calls() > 1; }));
  auto result = client.infer(simple_request(1, 2));
  CHECK(result.executed_on() == ExecutedOn::Local);
  CHECK(result.output("OUTPUT0").as<std::int32_t>()[0] == 3);
  CHECK(a.calls() + b.calls() == 0);
}

TEST_CASE("without a fallback, endpoints that refuse discovery are still tried") {
  FakeServer a("discovery-only");
  a.refuse_discovery(Error(StatusCode::Unavailable, "no capacity"));
  Client client(discovering({a.url()}));
  REQUIRE(eventually([&] { return a.discovery_calls() > 1; }));
  CHECK(client.infer(simple_request(1, 2)).output("OUTPUT0").as<std::int32_t>()[0] == 3);
}

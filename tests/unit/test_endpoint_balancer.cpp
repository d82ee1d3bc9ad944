// The endpoint pool's balancer, on views of endpoint loads: least outstanding with ties taking
// turns, power of two choices preferring the faster, the passes of one pick (preferred
// endpoints first, `avoid` only as a last resort).
#include "client/endpoint_balancer.hpp"

#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

using sonic::Balancing;
using sonic::Routing;
using sonic::detail::EndpointBalancer;
using sonic::detail::EndpointLoad;
using sonic::detail::PickPasses;

namespace {

constexpr std::size_t kNoSlot = EndpointBalancer::kNone;

// Chooses as a pick does: the choice, then picked().
std::size_t balancer_take(EndpointBalancer& balancer, const std::vector<EndpointLoad>& loads,
                          const std::vector<bool>& eligible, std::size_t avoid = kNoSlot) {
  const std::size_t slot = balancer.choose(loads, eligible, avoid);
  if (slot != kNoSlot) balancer.picked(slot);
  return slot;
}

}  // namespace

TEST_CASE("least outstanding takes the endpoint with the fewest attempts in flight") {
  EndpointBalancer balancer(Balancing::LeastOutstanding, 1);
  std::vector<EndpointLoad> loads{{3, 0}, {1, 0}, {2, 0}};
  CHECK(balancer_take(balancer, loads, {true, true, true}) == 1);
  CHECK(balancer_take(balancer, loads, {true, false, true}) == 2);  // the ineligible are skipped
  CHECK(balancer_take(balancer, loads, {false, false, false}) == kNoSlot);
  CHECK(balancer.choose({}, {}, kNoSlot) == kNoSlot);
}

TEST_CASE("least outstanding's ties take turns, and an ineligible endpoint moves no turn on") {
  EndpointBalancer balancer(Balancing::LeastOutstanding, 1);
  std::vector<EndpointLoad> loads(3);
  const std::vector<bool> all{true, true, true};
  std::vector<std::size_t> order;
  for (int i = 0; i < 6; ++i) order.push_back(balancer_take(balancer, loads, all));
  CHECK(order == std::vector<std::size_t>{0, 1, 2, 0, 1, 2});
  // Slot 1 out: the turn passes from 2 over 0 to 2 again.
  CHECK(balancer_take(balancer, loads, {true, false, true}) == 0);
  CHECK(balancer_take(balancer, loads, {true, false, true}) == 2);
  CHECK(balancer_take(balancer, loads, all) == 0);
}

TEST_CASE("power of two choices prefers the endpoint with the lower latency") {
  EndpointBalancer balancer(Balancing::PowerOfTwoChoices, 7);
  // Two endpoints: both are drawn each time, so the faster always wins.
  std::vector<EndpointLoad> two{{0, 5e6}, {0, 1e6}};
  for (int i = 0; i < 50; ++i) CHECK(balancer_take(balancer, two, {true, true}) == 1);
  // Requests in flight count too: 3 in flight at 1 ms look slower than 1 at 1.5 ms.
  std::vector<EndpointLoad> busy{{3, 1e6}, {1, 1.5e6}};
  CHECK(balancer_take(balancer, busy, {true, true}) == 1);
  // Among four, the slowest never wins a draw, the fastest wins every draw it is in.
  std::vector<EndpointLoad> four{{0, 9e6}, {0, 1e6}, {0, 2e6}, {0, 3e6}};
  std::map<std::size_t, int> wins;
  for (int i = 0; i < 600; ++i) ++wins[balancer_take(balancer, four, {true, true, true, true})];
  CHECK(wins[0] == 0);
  CHECK(wins[1] > wins[2]);
  CHECK(wins[2] > wins[3]);
  CHECK(wins[1] > 250);  // in half of the draws (300), give or take
}

TEST_CASE("an endpoint not measured yet looks fast; a failure looks slow") {
  CHECK(EndpointBalancer::load_score({0, 0}) < EndpointBalancer::load_score({0, 1e3}));
  CHECK(EndpointBalancer::latency_after_success(0, 4e6) == doctest::Approx(4e6));
  CHECK(EndpointBalancer::latency_after_success(4e6, 9e6) == doctest::Approx(5e6));
  CHECK(EndpointBalancer::latency_after_failure(0) == doctest::Approx(1e6));
  CHECK(EndpointBalancer::latency_after_failure(3e6) == doctest::Approx(6e6));
  CHECK(EndpointBalancer::latency_after_failure(9e9) == doctest::Approx(1e10));
}

TEST_CASE("avoid is taken only when no other endpoint is eligible") {
  for (Balancing balancing : {Balancing::LeastOutstanding, Balancing::PowerOfTwoChoices}) {
    CAPTURE(static_cast<int>(balancing));
    EndpointBalancer balancer(balancing, 3);
    // Slot 0 is idle and fast, yet avoided.
    std::vector<EndpointLoad> loads{{0, 1e6}, {5, 9e6}};
    for (int i = 0; i < 10; ++i) CHECK(balancer_take(balancer, loads, {true, true}, 0) == 1);
    CHECK(balancer_take(balancer, loads, {true, false}, 0) == 0);
  }
}

TEST_CASE("a pick's passes: the first that finds an endpoint other than avoid settles it") {
  EndpointBalancer balancer(Balancing::LeastOutstanding, 1);
  std::vector<EndpointLoad> loads(3);
  SUBCASE("a stricter pass's choice stands") {
    PickPasses passes(balancer, loads, kNoSlot);
    CHECK(passes.pass({false, true, false}));
    CHECK(passes.settled());
    CHECK_FALSE(passes.pass({true, true, true}));  // skipped
    CHECK(passes.best() == 1);
  }
  SUBCASE("a pass that finds only avoid leaves it to a looser pass") {
    PickPasses passes(balancer, loads, 0);
    CHECK_FALSE(passes.pass({true, false, false}));  // only avoid: taken for now, not settled
    CHECK(passes.best() == 0);
    CHECK_FALSE(passes.settled());
    CHECK_FALSE(passes.pass({false, false, false}));  // nothing: the choice so far stays
    CHECK(passes.best() == 0);
    CHECK(passes.pass({true, false, true}));  // another: taken
    CHECK(passes.best() == 2);
  }
  SUBCASE("nothing eligible anywhere") {
    PickPasses passes(balancer, loads, kNoSlot);
    CHECK_FALSE(passes.pass({false, false, false}));
    CHECK(passes.best() == kNoSlot);
  }
}

TEST_CASE("preferred endpoints are found by their URL or by their host name's") {
  Routing routing;
  CHECK(sonic::detail::preferred_urls(routing, "jets") == nullptr);
  routing.preferred["jets"] = {"grpc://gpu-a:8001", "grpc://gpus.svc:8001"};
  const auto* urls = sonic::detail::preferred_urls(routing, "jets");
  REQUIRE(urls != nullptr);
  CHECK(sonic::detail::preferred_urls(routing, "taus") == nullptr);
  using sonic::detail::is_preferred;
  CHECK(is_preferred(*urls, "grpc://gpu-a:8001", nullptr));
  CHECK_FALSE(is_preferred(*urls, "grpc://gpu-b:8001", nullptr));
  const std::string name = "grpc://gpus.svc:8001";  // an address of a preferred name
  CHECK(is_preferred(*urls, "grpc://10.0.0.7:8001", &name));
  const std::string other = "grpc://cpus.svc:8001";
  CHECK_FALSE(is_preferred(*urls, "grpc://10.0.0.8:8001", &other));
}

// The circuit breaker's decisions: consecutive server failures eject an endpoint (never the
// last one in rotation without a fallback); a probe after its cool-down brings it back.
#include "client/endpoint_breaker.hpp"

#include <doctest/doctest.h>

#include <chrono>

using namespace std::chrono_literals;
using sonic::CircuitBreaker;
using sonic::Clock;
using sonic::detail::BreakerState;
using sonic::detail::EndpointBreaker;

namespace {

EndpointBreaker breaker_ejecting_after(int failures_to_eject, std::chrono::milliseconds cool_down) {
  CircuitBreaker options;
  options.failures_to_eject = failures_to_eject;
  options.cool_down = cool_down;
  return EndpointBreaker(options);
}

}  // namespace

TEST_CASE("failures_to_eject consecutive server failures eject an endpoint, once") {
  const auto breaker = breaker_ejecting_after(3, 1s);
  BreakerState state;
  const auto now = Clock::now();
  CHECK_FALSE(breaker.failed(state, true, now));
  CHECK_FALSE(breaker.failed(state, true, now));
  CHECK_FALSE(state.ejected);
  CHECK(breaker.failed(state, true, now));  // the third
  CHECK(state.ejected);
  CHECK(state.rest_until == now + 1s);
  CHECK_FALSE(breaker.failed(state, true, now));  // already out: no second ejection
}

TEST_CASE("a success starts the count of consecutive failures over") {
  const auto breaker = breaker_ejecting_after(2, 1s);
  BreakerState state;
  const auto now = Clock::now();
  CHECK_FALSE(breaker.failed(state, true, now));
  breaker.succeeded(state);
  CHECK_FALSE(breaker.failed(state, true, now));
  CHECK_FALSE(state.ejected);
  CHECK(breaker.failed(state, true, now));
}

TEST_CASE("the last endpoint in rotation stays in it, unless a fallback takes the requests") {
  CHECK_FALSE(EndpointBreaker::may_eject(1, false));
  CHECK(EndpointBreaker::may_eject(1, true));
  CHECK(EndpointBreaker::may_eject(2, false));

  const auto breaker = breaker_ejecting_after(2, 1s);
  BreakerState state;
  const auto now = Clock::now();
  for (int i = 0; i < 5; ++i) CHECK_FALSE(breaker.failed(state, false, now));
  CHECK_FALSE(state.ejected);
  CHECK(state.consecutive_failures == 2);  // counted, capped
  // Once another endpoint is back in rotation, the next failure ejects it.
  CHECK(breaker.failed(state, true, now));
}

TEST_CASE("an ejected endpoint is probed after its cool-down, and a ready one comes back") {
  const auto breaker = breaker_ejecting_after(1, 100ms);
  BreakerState state;
  const auto t0 = Clock::now();
  CHECK_FALSE(breaker.start_probe(state, t0));  // not ejected: nothing to probe
  REQUIRE(breaker.failed(state, true, t0));
  CHECK_FALSE(breaker.start_probe(state, t0 + 50ms));  // resting
  CHECK(breaker.start_probe(state, t0 + 100ms));
  CHECK(state.probing);
  CHECK_FALSE(breaker.start_probe(state, t0 + 200ms));  // one probe at a time

  // Not ready: another cool-down.
  CHECK_FALSE(breaker.probed(state, false, t0 + 200ms));
  CHECK(state.ejected);
  CHECK_FALSE(state.probing);
  CHECK_FALSE(breaker.start_probe(state, t0 + 250ms));
  REQUIRE(breaker.start_probe(state, t0 + 300ms));

  // Ready: back, with a clean count.
  CHECK(breaker.probed(state, true, t0 + 300ms));
  CHECK_FALSE(state.ejected);
  CHECK(state.consecutive_failures == 0);
  CHECK_FALSE(breaker.start_probe(state, t0 + 1s));
}

// HTTP's answers of an overloaded server or its proxy, heeded on http:// endpoints: 429 and 503
// with Retry-After (delay-seconds or an HTTP-date) pause the endpoint for that long.
#include <doctest/doctest.h>

#include <sonic/sonic.hpp>

#include <time.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "refusing_http_server.hpp"
#include "simple_request.hpp"

using namespace sonic;
using namespace sonic::test;
using namespace std::chrono_literals;

namespace {

ClientOptions one_endpoint(const std::string& url) {
  ClientOptions options;
  options.endpoints = {url};
  options.validate_inputs = false;  // the refusing server knows no metadata
  options.retry.initial_backoff = 0ms;
  options.retry.max_attempts = 2;
  return options;
}

// `when` as an IMF-fixdate, the form of HTTP-date servers send.
std::string http_date(std::chrono::system_clock::time_point when) {
  const std::time_t t = std::chrono::system_clock::to_time_t(when);
  struct tm utc {};
  gmtime_r(&t, &utc);
  char text[64];
  std::strftime(text, sizeof text, "%a, %d %b %Y %H:%M:%S GMT", &utc);
  return text;
}

}  // namespace

TEST_CASE("http:// 503 with Retry-After in seconds: the next attempt there waits that long") {
  RefusingHttpServer server(503, "1");
  Client client(one_endpoint(server.url()));
  auto result = client.infer_future(simple_request(1, 2).timeout(10s));
  try {
    (void)result.get();
    FAIL("the server refuses everything");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::Unavailable);
    CHECK(e.pushback() == std::chrono::milliseconds(1000));
  }
  const auto times = server.request_times();
  REQUIRE(times.size() == 2);
  CHECK(ms_between(times[0], times[1]) >= 990);  // no pushback: at once (backoff 0)
  CHECK(client.stats().endpoints[0].pushbacks == 2);
  CHECK(client.stats().endpoints[0].ejections == 0);
}

TEST_CASE("http:// 429 with an HTTP-date Retry-After: no attempt there before that date") {
  // Seconds are the date's finest unit: three seconds ahead is more than two from now.
  RefusingHttpServer server(429, http_date(std::chrono::system_clock::now() + 3s));
  Client client(one_endpoint(server.url()));
  auto result = client.infer_future(simple_request(1, 2).timeout(10s));
  CHECK_THROWS_AS((void)result.get(), Error);
  const auto times = server.request_times();
  REQUIRE(times.size() == 2);
  CHECK(ms_between(times[0], times[1]) >= 1990);
}

TEST_CASE("http:// 503 without Retry-After is an ordinary retryable failure") {
  RefusingHttpServer server(503, "");
  Client client(one_endpoint(server.url()));
  const auto start = std::chrono::steady_clock::now();
  auto result = client.infer_future(simple_request(1, 2).timeout(10s));
  try {
    (void)result.get();
    FAIL("the server refuses everything");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::Unavailable);
    CHECK_FALSE(e.pushback());
  }
  CHECK(server.requests() == 2);
  CHECK(ms_since(start) < 900);
}

// What a server says about trying again: gRPC's grpc-retry-pushback-ms (gRFC A6) and HTTP's
// Retry-After (RFC 9110 10.2.3), read as the delay before the next attempt.
#include "protocol/pushback.hpp"

#include <doctest/doctest.h>

#include <sonic/error.hpp>

#include <chrono>

using namespace std::chrono_literals;
using sonic::Error;
using sonic::protocol::parse_retry_after;
using sonic::protocol::parse_retry_pushback;

namespace {

// Sun, 06 Nov 1994 08:49:37 GMT, RFC 9110's example date.
const auto kExampleDate = std::chrono::system_clock::from_time_t(784111777);

}  // namespace

TEST_CASE("grpc-retry-pushback-ms: a non-negative integer is a delay, anything else no retry") {
  CHECK(parse_retry_pushback("0") == 0ms);
  CHECK(parse_retry_pushback("250") == 250ms);
  CHECK(parse_retry_pushback(" 250 ") == 250ms);  // as gRPC's SimpleAtoi reads it
  CHECK(parse_retry_pushback("+7") == 7ms);
  CHECK(parse_retry_pushback("-0") == 0ms);
  CHECK(parse_retry_pushback("-1") == Error::kNoRetry);
  CHECK(parse_retry_pushback("") == Error::kNoRetry);
  CHECK(parse_retry_pushback("soon") == Error::kNoRetry);
  CHECK(parse_retry_pushback("1.5") == Error::kNoRetry);
  CHECK(parse_retry_pushback("12ms") == Error::kNoRetry);
  CHECK(parse_retry_pushback("99999999999999999999") == Error::kNoRetry);  // not an int64
  CHECK(parse_retry_pushback("9223372036854775807") < Error::kNoRetry);    // a delay, still
}

TEST_CASE("Retry-After: delay-seconds") {
  const auto now = std::chrono::system_clock::now();
  CHECK(parse_retry_after("0", now) == 0ms);
  CHECK(parse_retry_after("120", now) == 120'000ms);
  CHECK(parse_retry_after(" 3 ", now) == 3'000ms);
  CHECK(parse_retry_after("99999999999999999999999", now) > 1'000'000'000'000ms);  // saturates
  CHECK_FALSE(parse_retry_after("", now));
  CHECK_FALSE(parse_retry_after("-5", now));
  CHECK_FALSE(parse_retry_after("1.5", now));
  CHECK_FALSE(parse_retry_after("soon", now));
}

TEST_CASE("Retry-After: an HTTP-date in each of its three forms") {
  const auto now = kExampleDate - 90s;
  CHECK(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now) == 90'000ms);   // IMF-fixdate
  CHECK(parse_retry_after("Sunday, 06-Nov-94 08:49:37 GMT", now) == 90'000ms);  // RFC 850
  CHECK(parse_retry_after("Sun Nov  6 08:49:37 1994", now) == 90'000ms);        // asctime
  CHECK(parse_retry_after("Wed Nov 16 08:49:37 1994", now) == 90'000ms + 240h);
  // A date already past asks for no wait.
  CHECK(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", kExampleDate + 1h) == 0ms);
  // A leap year's 29 February, and the turn of a year.
  CHECK(parse_retry_after("Thu, 29 Feb 1996 00:00:00 GMT", now));
  CHECK(parse_retry_after("Thu, 01 Jan 1970 00:00:00 GMT", now) == 0ms);
}

TEST_CASE("Retry-After: RFC 850's two-digit year is the most recent one not 50 years ahead") {
  // Seen in 1994, "06-Nov-43" is 2043 (49 years ahead), "06-Nov-45" 1945 (51 would be ahead).
  const auto now = kExampleDate;
  auto in_2043 = parse_retry_after("Friday, 06-Nov-43 08:49:37 GMT", now);
  REQUIRE(in_2043);
  CHECK(*in_2043 > 24h * 365 * 48);
  CHECK(parse_retry_after("Tuesday, 06-Nov-45 08:49:37 GMT", now) == 0ms);
}

TEST_CASE("Retry-After: malformed dates are ignored") {
  const auto now = kExampleDate - 90s;
  CHECK_FALSE(parse_retry_after("Sun, 06 Nov 1994 08:49:37", now));      // no GMT
  CHECK_FALSE(parse_retry_after("Sun, 06 Nov 1994 08:49:37 UTC", now));  // not GMT
  CHECK_FALSE(parse_retry_after("Sun, 6 Nov 1994 08:49:37 GMT", now));   // one digit
  CHECK_FALSE(parse_retry_after("Sun, 31 Feb 1994 08:49:37 GMT", now));  // no such day
  CHECK_FALSE(parse_retry_after("Sun, 29 Feb 1900 08:49:37 GMT", now));  // 1900 was no leap year
  CHECK_FALSE(parse_retry_after("Sun, 06 Foo 1994 08:49:37 GMT", now));
  CHECK_FALSE(parse_retry_after("Sun, 06 Nov 1994 24:00:00 GMT", now));
  CHECK_FALSE(parse_retry_after("Xyz, 06 Nov 1994 08:49:37 GMT", now));
  CHECK_FALSE(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT trailing", now));
  CHECK_FALSE(parse_retry_after("Sun Nov  6 08:49:37", now));
  CHECK_FALSE(parse_retry_after("Sun", now));
  CHECK_FALSE(parse_retry_after(",", now));
}

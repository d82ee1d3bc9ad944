#include <doctest/doctest.h>

#include <chrono>

#include "protocol/grpc_metadata.hpp"

using namespace std::chrono_literals;
using sonic::protocol::format_grpc_timeout;
using sonic::protocol::parse_grpc_timeout;

TEST_CASE("grpc-timeout has at most 8 digits, rounds up, and parses back") {
  CHECK(format_grpc_timeout(1500ns) == "1500n");
  CHECK(format_grpc_timeout(250ms) == "250000u");
  CHECK(format_grpc_timeout(2s) == "2000000u");
  CHECK(format_grpc_timeout(1234567891ns) == "1234568u");
  CHECK(format_grpc_timeout(0ns) == "1n");
  CHECK(format_grpc_timeout(std::chrono::hours(200000)).size() <= 9);
  for (std::chrono::nanoseconds d :
       {std::chrono::nanoseconds(1ns), std::chrono::nanoseconds(999us),
        std::chrono::nanoseconds(3s), std::chrono::nanoseconds(90min)}) {
    auto parsed = parse_grpc_timeout(format_grpc_timeout(d));
    REQUIRE(parsed.has_value());
    CHECK(*parsed >= d);
  }
  CHECK(parse_grpc_timeout("10S") == std::chrono::nanoseconds(10s));
  CHECK_FALSE(parse_grpc_timeout("").has_value());
  CHECK_FALSE(parse_grpc_timeout("10").has_value());
  CHECK_FALSE(parse_grpc_timeout("123456789S").has_value());
  CHECK_FALSE(parse_grpc_timeout("1x").has_value());
  CHECK_FALSE(parse_grpc_timeout("-1S").has_value());
}

TEST_CASE("grpc-message percent-encoding round-trips and tolerates bad escapes") {
  std::string text = "model 'x' 100% \xc3\xa9\n";
  std::string encoded = sonic::protocol::percent_encode(text);
  CHECK(encoded == "model 'x' 100%25 %C3%A9%0A");
  CHECK(sonic::protocol::percent_decode(encoded) == text);
  CHECK(sonic::protocol::percent_decode("50%") == "50%");
  CHECK(sonic::protocol::percent_decode("%zz") == "%zz");
}

TEST_CASE("HTTP statuses and stream resets map to gRPC codes as the spec says") {
  using sonic::StatusCode;
  CHECK(sonic::protocol::status_from_http(404) == StatusCode::Unimplemented);
  CHECK(sonic::protocol::status_from_http(503) == StatusCode::Unavailable);
  CHECK(sonic::protocol::status_from_http(401) == StatusCode::Unauthenticated);
  CHECK(sonic::protocol::status_from_http(500) == StatusCode::Unknown);
  CHECK(sonic::protocol::error_from_reset(7).code() == StatusCode::Unavailable);
  CHECK(sonic::protocol::error_from_reset(8).code() == StatusCode::Cancelled);
  CHECK(sonic::protocol::error_from_reset(1).code() == StatusCode::Internal);
}

TEST_CASE("binary metadata is base64 with padding") {
  CHECK(sonic::protocol::base64_encode("") == "");
  CHECK(sonic::protocol::base64_encode("f") == "Zg==");
  CHECK(sonic::protocol::base64_encode("fo") == "Zm8=");
  CHECK(sonic::protocol::base64_encode("foo") == "Zm9v");
  CHECK(sonic::protocol::base64_encode(std::string("\0\xff\x10", 3)) == "AP8Q");
}

TEST_CASE("grpc-status parses digits only; anything else is UNKNOWN") {
  using sonic::StatusCode;
  CHECK(sonic::protocol::parse_grpc_status("0") == StatusCode::Ok);
  CHECK(sonic::protocol::parse_grpc_status("14") == StatusCode::Unavailable);
  CHECK(sonic::protocol::parse_grpc_status("") == StatusCode::Unknown);
  CHECK(sonic::protocol::parse_grpc_status("1x") == StatusCode::Unknown);
  CHECK(sonic::protocol::parse_grpc_status("99") == StatusCode::Unknown);
  CHECK(sonic::protocol::parse_grpc_status("99999999999") == StatusCode::Unknown);
  CHECK(sonic::protocol::parse_grpc_timeout("99999999H").has_value());  // clamped, no overflow
}

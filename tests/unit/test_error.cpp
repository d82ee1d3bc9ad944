#include "sonic/error.hpp"

#include <doctest/doctest.h>

#include <set>
#include <string>

TEST_CASE("every status code has the gRPC name and number and a description") {
  std::set<std::string> names;
  for (int value = 0; value <= 16; ++value) {
    auto code = static_cast<sonic::StatusCode>(value);
    std::string name = sonic::to_string(code);
    CHECK(name != "UNKNOWN_STATUS");
    CHECK(std::string(sonic::describe(code)).size() > 5);
    CHECK(sonic::status_code_from_int(value) == code);
    names.insert(name);
  }
  CHECK(names.size() == 17);
  CHECK(std::string(sonic::to_string(sonic::StatusCode::InvalidArgument)) == "INVALID_ARGUMENT");
  CHECK(static_cast<int>(sonic::StatusCode::Unavailable) == 14);
  CHECK(static_cast<int>(sonic::StatusCode::Unauthenticated) == 16);
  CHECK(sonic::status_code_from_int(17) == sonic::StatusCode::Unknown);
  CHECK(sonic::status_code_from_int(-1) == sonic::StatusCode::Unknown);
}

TEST_CASE("Error carries code and message; what() has both") {
  sonic::Error e(sonic::StatusCode::NotFound, "unknown model 'x'");
  CHECK(e.code() == sonic::StatusCode::NotFound);
  CHECK(e.message() == "unknown model 'x'");
  CHECK(std::string(e.what()) == "NOT_FOUND: unknown model 'x'");
}

TEST_CASE("Result holds a value or an error") {
  sonic::Result<int> good = 42;
  CHECK(good.ok());
  CHECK(*good == 42);
  CHECK(good.code() == sonic::StatusCode::Ok);

  sonic::Result<int> bad = sonic::Error(sonic::StatusCode::Internal, "boom");
  CHECK_FALSE(bad);
  CHECK(bad.code() == sonic::StatusCode::Internal);
  CHECK_THROWS_AS(bad.value(), sonic::Error);
  try {
    (void)bad.value();
  } catch (const sonic::Error& e) {
    CHECK(e.message() == "boom");
  }

  sonic::Result<void> done;
  CHECK(done.ok());
  sonic::Result<void> failed = sonic::Error(sonic::StatusCode::Aborted, "no");
  CHECK_FALSE(failed.ok());
  CHECK_THROWS_AS(failed.value(), sonic::Error);
}

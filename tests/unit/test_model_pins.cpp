// Pinned model versions: a request that names none gets the pinned one, one that names another
// is refused, and an answer from another version is not taken.
#include "client/model_pins.hpp"

#include <doctest/doctest.h>

using sonic::InferRequest;
using sonic::InferResult;
using sonic::Routing;
using sonic::StatusCode;
using sonic::detail::apply_pin;
using sonic::detail::check_pin;

namespace {

Routing pinned(const std::string& model, const std::string& version) {
  Routing routing;
  routing.pins[model].version = version;
  return routing;
}

}  // namespace

TEST_CASE("a request naming no version gets its model's pinned one") {
  InferRequest request("tagger");
  REQUIRE(apply_pin(pinned("tagger", "3"), request).ok());
  CHECK(request.model_version() == "3");
}

TEST_CASE("a request naming another version than the pinned one is refused") {
  InferRequest request("tagger", "2");
  auto applied = apply_pin(pinned("tagger", "3"), request);
  REQUIRE_FALSE(applied.ok());
  CHECK(applied.code() == StatusCode::FailedPrecondition);
  CHECK(applied.error().message().find("pinned to version 3") != std::string::npos);
  CHECK(request.model_version() == "2");
}

TEST_CASE("pins of other models, and pins without a version, leave a request alone") {
  InferRequest request("other");
  CHECK(apply_pin(pinned("tagger", "3"), request).ok());
  CHECK(request.model_version().empty());
  Routing checksum_only;
  checksum_only.pins["other"].config_checksum = "0123456789abcdef";
  CHECK(apply_pin(checksum_only, request).ok());
  CHECK(request.model_version().empty());
}

TEST_CASE("an answer from another version than the pinned one is refused") {
  const Routing routing = pinned("tagger", "3");
  const InferRequest request("tagger", "3");
  const InferResult from_pinned("tagger", "3", "", {});
  CHECK(check_pin(routing, request, from_pinned).ok());
  const InferResult unnamed("tagger", "", "", {});  // a server that does not say: taken
  CHECK(check_pin(routing, request, unnamed).ok());
  const InferResult from_other("tagger", "4", "", {});
  auto checked = check_pin(routing, request, from_other);
  REQUIRE_FALSE(checked.ok());
  CHECK(checked.code() == StatusCode::FailedPrecondition);
  CHECK(checked.error().message().find("answered from version 4") != std::string::npos);
}

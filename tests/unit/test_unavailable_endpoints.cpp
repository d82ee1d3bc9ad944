// The error of a request every endpoint failed: it names each endpoint tried and what it said.
#include "client/unavailable_endpoints.hpp"

#include <doctest/doctest.h>

#include <string>

using sonic::Error;
using sonic::ModelRef;
using sonic::StatusCode;
using sonic::detail::no_endpoint_error;
using sonic::detail::UnavailableEndpoints;

namespace {

std::string url_of(std::size_t slot) { return "grpc://10.0.0." + std::to_string(slot) + ":8001"; }

}  // namespace

TEST_CASE("one unavailable endpoint: its error as it was") {
  UnavailableEndpoints tried;
  const Error refused(StatusCode::Unavailable, "connection refused");
  tried.note(1, refused);
  CHECK(tried.describe(refused, url_of).message() == "connection refused");
}

TEST_CASE("several: each endpoint named once, with its latest word, in the order first tried") {
  UnavailableEndpoints tried;
  tried.note(1, Error(StatusCode::Unavailable, "connection refused"));
  tried.note(2, Error(StatusCode::Unavailable, "grpc://10.0.0.2:8001: connection reset"));
  tried.note(1, Error(StatusCode::Unavailable, "timed out connecting"));
  const Error last(StatusCode::Unavailable, "timed out connecting");
  const Error described = tried.describe(last, url_of);
  CHECK(described.code() == StatusCode::Unavailable);
  CHECK(described.message() ==
        "none of the 2 endpoints tried answered: grpc://10.0.0.1:8001: timed out connecting; "
        "grpc://10.0.0.2:8001: connection reset");
}

TEST_CASE("a last error that is not an endpoint's own comes first") {
  UnavailableEndpoints tried;
  tried.note(0, Error(StatusCode::Unavailable, "a"));
  tried.note(1, Error(StatusCode::Unavailable, "b"));
  const Error described = tried.describe(Error(StatusCode::Unavailable, "all ejected"),
                                         [](std::size_t) { return std::string(); });
  CHECK(described.message() == "all ejected; none of the 2 endpoints tried answered: a; b");
}

TEST_CASE("an error other than UNAVAILABLE is left as it is") {
  UnavailableEndpoints tried;
  tried.note(0, Error(StatusCode::Unavailable, "a"));
  tried.note(1, Error(StatusCode::Unavailable, "b"));
  const Error invalid(StatusCode::InvalidArgument, "bad input");
  CHECK(tried.describe(invalid, url_of).message() == "bad input");
}

TEST_CASE("no endpoint: the routing's reason, or that all are ejected") {
  const ModelRef model{"tagger", ""};
  CHECK(no_endpoint_error(model, "", 3).message() ==
        "no endpoint available: all 3 are ejected after failures");
  const Error routed = no_endpoint_error(model, "grpc://a:1: does not list the model", 1);
  CHECK(routed.code() == StatusCode::Unavailable);
  CHECK(routed.message() ==
        "no endpoint may serve model 'tagger' now: grpc://a:1: does not list the model");
}

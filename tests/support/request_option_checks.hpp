// Triton's request options (sequence, priority, server timeout), checked the same way against
// every server: the typed setters of InferRequest give what Triton takes, and a reserved
// parameter of the wrong type or value is INVALID_ARGUMENT, as Triton's front end answers.
#pragma once

#include <doctest/doctest.h>

#include <chrono>
#include <functional>
#include <string>

#include <sonic/sonic.hpp>

namespace sonic::test {

/// `make_request` gives a request that succeeds on the server as it is.
inline void check_request_options(Client& client,
                                  const std::function<InferRequest()>& make_request) {
  using namespace std::chrono_literals;
  CHECK_NOTHROW((void)client.infer(
      make_request().sequence(7, /*start=*/true).priority(1).server_timeout(50ms)));
  CHECK_NOTHROW((void)client.infer(make_request().sequence("sequence-a", true, true)));

  auto code_of = [&](InferRequest request) {
    try {
      (void)client.infer(std::move(request));
      return StatusCode::Ok;
    } catch (const Error& e) {
      return e.code();
    }
  };
  CHECK(code_of(make_request().parameter("sequence_start", std::int64_t{1})) ==
        StatusCode::InvalidArgument);
  CHECK(code_of(make_request().parameter("sequence_id", 1.5)) == StatusCode::InvalidArgument);
  CHECK(code_of(make_request().parameter("priority", std::int64_t{-1})) ==
        StatusCode::InvalidArgument);
  CHECK(code_of(make_request().parameter("timeout", std::string("soon"))) ==
        StatusCode::InvalidArgument);
  CHECK(code_of(make_request().parameter("triton_anything", true)) == StatusCode::InvalidArgument);
}

}  // namespace sonic::test

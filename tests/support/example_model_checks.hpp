// Triton's example models (simple_string, simple_sequence) through a client, checked the same
// way against sonic-server and the Triton-like python_server.py: BYTES of decimal strings,
// and a sequence driven by InferRequest::sequence().
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <sonic/sonic.hpp>

namespace sonic::test {

inline void check_example_models(Client& client) {
  std::vector<std::string> a(16, "40"), b(16, "2");
  auto strings = client.infer(InferRequest("simple_string")
                                  .input("INPUT0", Tensor::from_strings(a, {1, 16}))
                                  .input("INPUT1", Tensor::from_strings(b, {1, 16})));
  CHECK(strings.output("OUTPUT0").to_strings() == std::vector<std::string>(16, "42"));
  CHECK(strings.output("OUTPUT1").to_strings() == std::vector<std::string>(16, "38"));

  auto step = [&](std::int32_t value, bool start, bool end) {
    return client
        .infer(InferRequest("simple_sequence")
                   .input("INPUT", Tensor::from_vector(std::vector<std::int32_t>{value}, {1, 1}))
                   .sequence("run-17", start, end))
        .output("OUTPUT")
        .as<std::int32_t>()[0];
  };
  // Triton's simple_sequence: (INPUT + START) * READY.
  CHECK(step(10, true, false) == 11);
  CHECK(step(5, false, false) == 5);
  CHECK(step(-3, false, true) == -3);
  try {
    (void)step(1, false, false);  // ended: Triton's sequence batcher wants START first
    FAIL("a request of an ended sequence must fail");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::InvalidArgument);
  }
}

}  // namespace sonic::test

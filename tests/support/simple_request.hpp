// Test support: the request of the `simple` model every server in the tests hosts, and
// milliseconds between moments; no server needed (loopback_server.hpp includes this).
#pragma once

#include <sonic/sonic.hpp>

#include <chrono>
#include <cstdint>
#include <vector>

namespace sonic::test {

/// Two INT32 [1,16] inputs for `simple`.
inline InferRequest simple_request(std::int32_t a, std::int32_t b) {
  return InferRequest("simple")
      .input("INPUT0", Tensor::from_vector(std::vector<std::int32_t>(16, a), {1, 16}))
      .input("INPUT1", Tensor::from_vector(std::vector<std::int32_t>(16, b), {1, 16}));
}

inline double ms_between(std::chrono::steady_clock::time_point from,
                         std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

inline double ms_since(std::chrono::steady_clock::time_point start) {
  return ms_between(start, std::chrono::steady_clock::now());
}

}  // namespace sonic::test

// sonic — the built-in models sonic-server hosts, and every test and example can count on
// (part of the sonic::server library).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "sonic/example_models.hpp"
#include "sonic/executor.hpp"

namespace sonic::models {

/// Triton's example model simple as its example repository publishes it (server
/// docs/examples/model_repository/simple: max_batch_size 8, INT32 INPUT0, INPUT1 of dims [16])
/// → OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1, of the inputs' shape [batch, 16].
inline Model simple() {
  Model m;
  m.name = "simple";
  m.max_batch_size = 8;
  m.inputs = {{"INPUT0", DataType::Int32, {-1, 16}}, {"INPUT1", DataType::Int32, {-1, 16}}};
  m.outputs = {{"OUTPUT0", DataType::Int32, {-1, 16}}, {"OUTPUT1", DataType::Int32, {-1, 16}}};
  m.compute = [](const InferRequest& request) -> Result<std::vector<NamedTensor>> {
    const Tensor& first = request.find_input("INPUT0")->tensor;
    auto a = first.as<std::int32_t>();
    auto b = request.find_input("INPUT1")->tensor.as<std::int32_t>();
    std::vector<std::int32_t> sum(a.size()), difference(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      sum[i] = detail::wrapping_sum(a[i], b[i]);
      difference[i] = detail::wrapping_difference(a[i], b[i]);
    }
    return std::vector<NamedTensor>{
        {"OUTPUT0", Tensor::from_vector(std::move(sum), first.shape()), {}},
        {"OUTPUT1", Tensor::from_vector(std::move(difference), first.shape()), {}}};
  };
  return m;
}

/// A model that returns its input unchanged: `type` INPUT0 of shape [-1,-1] → OUTPUT0. The output
/// shares the input's bytes where the input owns them, so only the transport copies.
inline Model identity(std::string name, DataType type, std::chrono::milliseconds delay = {}) {
  Model m;
  m.name = std::move(name);
  m.inputs = {{"INPUT0", type, {-1, -1}}};
  m.outputs = {{"OUTPUT0", type, {-1, -1}}};
  m.compute = [delay](const InferRequest& request) -> Result<std::vector<NamedTensor>> {
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
    return std::vector<NamedTensor>{
        {"OUTPUT0", request.find_input("INPUT0")->tensor.to_owned(), {}}};
  };
  return m;
}

/// The built-in identity of a datatype: identity_<datatype in lower case> (identity_bool,
/// identity_uint8, ..., identity_fp32, ..., identity_bytes).
inline std::string identity_name(DataType type) {
  std::string name = "identity_";
  for (const char* c = to_string(type); *c; ++c) {
    name += static_cast<char>(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
  }
  return name;
}

/// An identity of every datatype (identity_name()): clients in any language check each
/// datatype's round trip against them.
inline std::vector<Model> identities() {
  std::vector<Model> all;
  for (DataType type : kAllDataTypes) all.push_back(identity(identity_name(type), type));
  return all;
}

/// The models sonic-server hosts by default: simple, the identities (identity_fp32 and one of
/// every other datatype), and Triton's example models simple_string, simple_identity,
/// simple_sequence and repeat_int32 (example_models.hpp).
inline std::vector<Model> builtin() {
  std::vector<Model> all = {simple(), simple_string(), simple_identity(), simple_sequence(),
                            repeat_int32()};
  // identity_fp32 serves payload-size sweeps (sonic-perf, the benchmarks) too.
  for (Model& identity : identities()) all.push_back(std::move(identity));
  return all;
}

}  // namespace sonic::models

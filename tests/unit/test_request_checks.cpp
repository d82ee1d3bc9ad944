// The checks before anything runs (src/executor/request_checks.hpp): a model's functions, a
// request against its model's inputs and outputs, a merged request's batch size.
#include "executor/request_checks.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

sonic::Result<std::vector<sonic::NamedTensor>> checks_compute(const sonic::InferRequest&) {
  return std::vector<sonic::NamedTensor>{};
}

// Three FP32 inputs of shape [-1, 4] (the third optional when asked), one output.
sonic::Model three_inputs(bool third_optional) {
  sonic::Model m;
  m.name = "m";
  m.inputs = {{"A", sonic::DataType::Fp32, {-1, 4}},
              {"B", sonic::DataType::Fp32, {-1, 4}},
              {"C", sonic::DataType::Fp32, {-1, 4}}};
  m.outputs = {{"OUT", sonic::DataType::Fp32, {-1, 4}}};
  if (third_optional) m.optional_inputs = {"C"};
  m.compute = checks_compute;
  return m;
}

sonic::Result<void> check(const sonic::Model& model, const sonic::InferRequest& request) {
  return sonic::detail::check_against_model(model, model.metadata(), request);
}

}  // namespace

TEST_CASE("a model needs exactly one function, and a scheduling it can have") {
  sonic::Model m = three_inputs(false);
  CHECK(sonic::detail::check_functions(m).ok());
  sonic::Model none = m;
  none.compute = nullptr;
  CHECK(sonic::detail::check_functions(none).code() == sonic::StatusCode::InvalidArgument);
  sonic::Model both = m;
  both.decoupled = [](const sonic::InferRequest&, const sonic::ResponseSink&) {
    return sonic::Result<void>{};
  };
  auto two = sonic::detail::check_functions(both);
  CHECK(two.code() == sonic::StatusCode::InvalidArgument);
  CHECK(two.error().message() == "model 'm' needs one function: compute or decoupled");
  sonic::Model stateful = m;
  stateful.sequence_batching = sonic::SequenceBatching{};
  CHECK(sonic::detail::check_functions(stateful).ok());
  stateful.dynamic_batching = sonic::DynamicBatching{};
  CHECK(sonic::detail::check_functions(stateful).code() == sonic::StatusCode::InvalidArgument);
  sonic::Model streamed = none;
  streamed.decoupled = both.decoupled;
  CHECK(sonic::detail::check_functions(streamed).ok());
  streamed.sequence_batching = sonic::SequenceBatching{};  // a sequence needs compute
  CHECK(sonic::detail::check_functions(streamed).code() == sonic::StatusCode::InvalidArgument);
}

TEST_CASE("a request with every required input of the right type and shape passes") {
  std::vector<float> x(8);
  const sonic::Model m = three_inputs(true);
  auto request = sonic::InferRequest("m")
                     .input("A", sonic::Tensor::view(x, {2, 4}))
                     .input("B", sonic::Tensor::view(x, {2, 4}));
  CHECK(check(m, request).ok());
  CHECK(check(m, request.output("OUT")).ok());
  CHECK(check(m, sonic::InferRequest(request).input("C", sonic::Tensor::view(x, {2, 4}))).ok());
}

TEST_CASE("missing required inputs are refused in Triton's words") {
  std::vector<float> x(8);
  auto request = sonic::InferRequest("m").input("A", sonic::Tensor::view(x, {2, 4}));
  auto all_required = check(three_inputs(false), request);
  CHECK(all_required.code() == sonic::StatusCode::InvalidArgument);
  CHECK(all_required.error().message() ==
        "expected 3 inputs but got 1 inputs for model 'm'. Got input(s) ['A'], but missing "
        "required input(s) ['B','C']. Please provide all required input(s).");
  auto one_optional = check(three_inputs(true), request);
  CHECK(one_optional.error().message() ==
        "expected number of inputs between 2 and 3 but got 1 inputs for model 'm'. Got input(s) "
        "['A'], but missing required input(s) ['B']. Please provide all required input(s).");
}

TEST_CASE("unknown inputs and outputs, wrong types and shapes are refused") {
  std::vector<float> x(8);
  std::vector<std::int32_t> ints(8);
  const sonic::Model m = three_inputs(true);
  auto with = [&](sonic::Tensor a) {
    return sonic::InferRequest("m")
        .input("A", std::move(a))
        .input("B", sonic::Tensor::view(x, {2, 4}));
  };
  CHECK(check(m, with(sonic::Tensor::view(ints, {2, 4}))).code() ==
        sonic::StatusCode::InvalidArgument);
  CHECK(check(m, with(sonic::Tensor::view(x, {4, 2}))).code() ==
        sonic::StatusCode::InvalidArgument);
  CHECK(check(m, with(sonic::Tensor::view(x, {8}))).code() == sonic::StatusCode::InvalidArgument);
  auto unknown_input =
      with(sonic::Tensor::view(x, {2, 4})).input("D", sonic::Tensor::view(x, {2, 4}));
  CHECK(check(m, unknown_input).code() == sonic::StatusCode::InvalidArgument);
  auto unknown_output = with(sonic::Tensor::view(x, {2, 4})).output("NOPE");
  CHECK(check(m, unknown_output).code() == sonic::StatusCode::InvalidArgument);
}

TEST_CASE("an output's classification count must be a positive int64") {
  std::vector<float> x(8);
  const sonic::Model m = three_inputs(true);
  auto asking = [&](sonic::Parameters parameters) {
    return sonic::InferRequest("m")
        .input("A", sonic::Tensor::view(x, {2, 4}))
        .input("B", sonic::Tensor::view(x, {2, 4}))
        .output("OUT", std::move(parameters));
  };
  CHECK(check(m, asking({{"classification", std::int64_t{2}}})).ok());
  CHECK(check(m, asking({{"classification", std::int64_t{0}}})).code() ==
        sonic::StatusCode::InvalidArgument);
  CHECK(check(m, asking({{"classification", std::string("two")}})).code() ==
        sonic::StatusCode::InvalidArgument);
}

TEST_CASE("a merged request may hold at most the model's max_batch_size") {
  sonic::Model m = three_inputs(false);
  m.max_batch_size = 8;
  CHECK(sonic::detail::check_batch_size(m, 8).ok());
  CHECK(sonic::detail::check_batch_size(m, -1).ok());  // no shared first dimension: not refused
  auto over = sonic::detail::check_batch_size(m, 9);
  CHECK(over.code() == sonic::StatusCode::InvalidArgument);
  CHECK(over.error().message() == "inference request batch-size must be <= 8 for 'm'");
}

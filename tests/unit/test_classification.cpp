// Triton's classification extension (server src/classification.cc): the top k classes of an
// output as BYTES "value:index[:label]", highest first, per batch row.
#include "executor/classification.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

std::vector<std::string> strings_of(const sonic::Result<sonic::Tensor>& classes) {
  return classes.value().to_strings();
}

}  // namespace

TEST_CASE("each batch row's top classes, highest first, with std::to_string's six decimals") {
  auto scores = sonic::Tensor::from_vector(std::vector<float>{0.1f, 3.3f, 2.5f, -1.0f,  //
                                                              9.0f, 0.0f, 0.5f, 0.25f},
                                           {2, 4});
  auto classes = sonic::detail::classify(scores, true, 2, {"cat", "dog"});
  CHECK(classes.value().dtype() == sonic::DataType::Bytes);
  CHECK(classes.value().shape() == sonic::Shape{2, 2});
  CHECK(strings_of(classes) ==
        std::vector<std::string>{"3.300000:1:dog", "2.500000:2", "9.000000:0:cat", "0.500000:2"});
}

TEST_CASE("without a batch dimension the whole tensor is one row; k past it is clamped") {
  auto scores = sonic::Tensor::from_vector(std::vector<std::int8_t>{-5, 7, 7, 1}, {2, 2});
  auto classes = sonic::detail::classify(scores, false, 10, {});
  CHECK(classes.value().shape() == sonic::Shape{4});
  // 8-bit values print as numbers; equal values keep the lower index first.
  CHECK(strings_of(classes) == std::vector<std::string>{"7:1", "7:2", "1:3", "-5:0"});
}

TEST_CASE("types Triton does not classify are refused with its words") {
  auto strings = sonic::Tensor::from_strings(std::vector<std::string>{"a"}, {1});
  auto refused = sonic::detail::classify(strings, false, 1, {});
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code() == sonic::StatusCode::InvalidArgument);
  CHECK(refused.error().message() ==
        "class result not available for output due to unsupported type 'BYTES'");
}

TEST_CASE("the class count must be a positive int64") {
  sonic::RequestedOutput wanted{"y", {{"classification", std::int64_t{3}}}};
  CHECK(sonic::detail::requested_class_count(wanted).value() == 3);
  wanted.parameters["classification"] = std::int64_t{0};
  CHECK(sonic::detail::requested_class_count(wanted).error().message() ==
        "invalid value for 'classification' parameter, expected >= 0");
  wanted.parameters["classification"] = std::string("3");
  CHECK(sonic::detail::requested_class_count(wanted).error().message() ==
        "invalid value type for 'classification' parameter, expected int64_param");
  CHECK(sonic::detail::requested_class_count({"y", {}}).value() == 0);
}

#include "sonic/tensor.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

using sonic::DataType;
using sonic::Tensor;

TEST_CASE("datatypes have KServe names, parse back, and element sizes") {
  const std::pair<DataType, std::size_t> sizes[] = {
      {DataType::Bool, 1},   {DataType::UInt8, 1}, {DataType::UInt16, 2}, {DataType::UInt32, 4},
      {DataType::UInt64, 8}, {DataType::Int8, 1},  {DataType::Int16, 2},  {DataType::Int32, 4},
      {DataType::Int64, 8},  {DataType::Fp16, 2},  {DataType::Bf16, 2},   {DataType::Fp32, 4},
      {DataType::Fp64, 8},   {DataType::Bytes, 0}};
  for (const auto& entry : sizes) {
    DataType type = entry.first;
    std::size_t size = entry.second;
    CAPTURE(sonic::to_string(type));
    CHECK(sonic::element_size(type) == size);
    CHECK(sonic::parse_datatype(sonic::to_string(type)) == type);
  }
  CHECK(std::string(sonic::to_string(DataType::Fp32)) == "FP32");
  CHECK(std::string(sonic::to_string(DataType::Bytes)) == "BYTES");
  CHECK_FALSE(sonic::parse_datatype("FLOAT32").has_value());
  CHECK(sonic::datatype_of<float> == DataType::Fp32);
  CHECK(sonic::datatype_of<std::int64_t> == DataType::Int64);
  CHECK(sonic::datatype_of<sonic::Float16> == DataType::Fp16);
}

TEST_CASE("element counts and shape text") {
  CHECK(sonic::element_count({1, 16}) == 16u);
  CHECK(sonic::element_count({}) == 1u);
  CHECK(sonic::element_count({3, 0}) == 0u);
  CHECK_FALSE(sonic::element_count({-1, 4}).has_value());
  CHECK_FALSE(sonic::element_count({1ll << 40, 1ll << 40}).has_value());
  CHECK(sonic::to_string(sonic::Shape{1, -1}) == "[1,-1]");
}

TEST_CASE("a view borrows the caller's memory without copying") {
  std::vector<float> values = {1.f, 2.f, 3.f, 4.f, 5.f, 6.f};
  Tensor t = Tensor::view(values, {2, 3});
  CHECK(t.borrowed());
  CHECK(t.dtype() == DataType::Fp32);
  CHECK(t.byte_size() == 24);
  CHECK(t.data() == reinterpret_cast<const std::uint8_t*>(values.data()));
  values[0] = 42.f;  // visible through the view: no copy was made
  CHECK(t.as<float>()[0] == 42.f);
  Tensor owned = t.to_owned();
  CHECK_FALSE(owned.borrowed());
  CHECK(owned.data() != t.data());
  values[0] = 7.f;
  CHECK(owned.as<float>()[0] == 42.f);
}

TEST_CASE("from_vector takes ownership without copying the elements") {
  std::vector<std::int32_t> values(1000, 7);
  const std::int32_t* before = values.data();
  Tensor t = Tensor::from_vector(std::move(values), {10, 100});
  CHECK_FALSE(t.borrowed());
  CHECK(reinterpret_cast<const std::int32_t*>(t.data()) == before);
  Tensor copy = t;  // copies share bytes
  CHECK(copy.data() == t.data());
  CHECK(copy.as<std::int32_t>().size() == 1000);
}

TEST_CASE("typed views check datatype and size with clear messages") {
  std::vector<std::int32_t> values(16, 1);
  Tensor t = Tensor::view(values, {1, 16});
  CHECK(t.as<std::int32_t>().size() == 16);
  try {
    (void)t.as<float>();
    FAIL("reading INT32 as FP32 must throw");
  } catch (const sonic::Error& e) {
    CHECK(e.code() == sonic::StatusCode::InvalidArgument);
    CHECK(e.message() == "cannot read an INT32 tensor as FP32: read it as std::int32_t");
  }
  CHECK_THROWS_WITH_AS(
      (void)t.string_views(),
      "INVALID_ARGUMENT: cannot read an INT32 tensor as strings: read it as std::int32_t",
      sonic::Error);
  Tensor strings = Tensor::from_strings(std::vector<std::string>{"a"}, {1});
  CHECK_THROWS_WITH_AS(
      (void)strings.as<float>(),
      "INVALID_ARGUMENT: cannot read a BYTES tensor as FP32: read it with string_views() or "
      "to_strings()",
      sonic::Error);
  Tensor wrong_shape = Tensor::view(values.data(), values.size(), {1, 15});
  CHECK_FALSE(wrong_shape.check().ok());
  CHECK(wrong_shape.check().error().message().find("needs 60 bytes but has 64") !=
        std::string::npos);
  CHECK_THROWS_AS(wrong_shape.as<std::int32_t>(), sonic::Error);
  CHECK_THROWS_AS(t.as<std::int32_t>().at(16), sonic::Error);
}

TEST_CASE("BYTES tensors round-trip strings, including empty and binary ones") {
  std::vector<std::string> strings = {"hello", "", std::string("a\0b", 3), std::string(300, 'x')};
  Tensor t = Tensor::from_strings(strings, {4});
  CHECK(t.dtype() == DataType::Bytes);
  CHECK(t.byte_size() == 4 * 4 + 5 + 0 + 3 + 300);
  CHECK(t.check().ok());
  CHECK(t.to_strings() == strings);
  // Wire layout: 4-byte little-endian length, then the bytes.
  CHECK(t.data()[0] == 5);
  CHECK(t.data()[1] == 0);
  CHECK(std::memcmp(t.data() + 4, "hello", 5) == 0);
  CHECK_FALSE(Tensor::from_strings(strings, {5}).check().ok());
  CHECK_THROWS_AS(Tensor::from_strings(strings, {4}).as<std::uint8_t>(), sonic::Error);
}

TEST_CASE("BYTES decoding rejects lengths that lie") {
  const std::uint8_t truncated_length[] = {5, 0, 0};
  CHECK_FALSE(sonic::detail::decode_bytes_elements(truncated_length, 3).ok());
  const std::uint8_t too_long[] = {9, 0, 0, 0, 'a', 'b'};
  auto r = sonic::detail::decode_bytes_elements(too_long, sizeof too_long);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message().find("runs past the end") != std::string::npos);
  const std::uint8_t huge[] = {0xff, 0xff, 0xff, 0xff};
  CHECK_FALSE(sonic::detail::decode_bytes_elements(huge, 4).ok());
}

TEST_CASE("bfloat16 conversion keeps the upper half of a float") {
  auto b = sonic::BFloat16::from_float(1.5f);
  CHECK(b.bits == 0x3fc0);
  CHECK(b.to_float() == 1.5f);
}

// Triton's classification extension: an output requested with the parameter "classification"
// (int64 k) comes back as its top k classes, as BYTES "value:index" or "value:index:label",
// instead of the whole tensor. What the server and the fallback both do.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "sonic/error.hpp"
#include "sonic/request.hpp"
#include "sonic/tensor.hpp"

namespace sonic::detail {

/// The class count an output asks for: nothing without the parameter; INVALID_ARGUMENT, in
/// Triton's words (server src/grpc/grpc_utils.cc, ParseClassificationParams), for one that is
/// not an int64 or not positive.
inline Result<std::int64_t> requested_class_count(const RequestedOutput& output) {
  auto it = output.parameters.find("classification");
  if (it == output.parameters.end()) return std::int64_t{0};
  const auto* k = std::get_if<std::int64_t>(&it->second);
  if (!k) {
    return Error(StatusCode::InvalidArgument,
                 "invalid value type for 'classification' parameter, expected int64_param");
  }
  // Triton's words say ">= 0" though it refuses 0 too.
  if (*k <= 0) {
    return Error(StatusCode::InvalidArgument,
                 "invalid value for 'classification' parameter, expected >= 0");
  }
  return *k;
}

template <typename T>
void add_class_results(const Tensor& output, bool batched, std::size_t k,
                       const std::vector<std::string>& labels, std::vector<std::string>& out,
                       Shape& shape) {
  auto values = output.as<T>();
  const std::size_t rows =
      batched ? static_cast<std::size_t>(std::max<std::int64_t>(output.shape().front(), 0)) : 1;
  const std::size_t per_row = rows == 0 ? 0 : values.size() / rows;
  const std::size_t count = std::min(k, per_row);  // a k past the classes is clamped, as Triton
  shape = batched ? Shape{static_cast<std::int64_t>(rows), static_cast<std::int64_t>(count)}
                  : Shape{static_cast<std::int64_t>(count)};
  std::vector<std::size_t> order(per_row);
  for (std::size_t row = 0; row < rows; ++row) {
    const T* first = values.data() + row * per_row;
    std::iota(order.begin(), order.end(), std::size_t{0});
    // Highest first; equal values keep the lower index first (Triton's std::sort leaves their
    // order unspecified).
    std::stable_sort(order.begin(), order.end(),
                     [first](std::size_t a, std::size_t b) { return first[a] > first[b]; });
    for (std::size_t i = 0; i < count; ++i) {
      const std::size_t index = order[i];
      // std::to_string as Triton's server/src/classification.cc: six decimals for floats,
      // integers as integers (8-bit ones too).
      std::string text = std::to_string(+first[index]) + ":" + std::to_string(index);
      if (index < labels.size() && !labels[index].empty()) text += ":" + labels[index];
      out.push_back(std::move(text));
    }
  }
}

/// `output` as its top `k` classes: BYTES of shape [batch, min(k, classes)] when `batched` (the
/// model has a batch dimension: each row is classified apart), else [min(k, classes)], where
/// classes is the count of elements past the batch dimension. Highest value first; each
/// element "value:index", with ":label" when `labels` has a non-empty line for the index.
/// INVALID_ARGUMENT for a type Triton does not classify (it takes the integer types, FP32 and
/// FP64).
inline Result<Tensor> classify(const Tensor& output, bool batched, std::int64_t k,
                               const std::vector<std::string>& labels) {
  batched = batched && !output.shape().empty();
  std::vector<std::string> classes;
  Shape shape;
  auto add = [&](auto zero) {
    add_class_results<decltype(zero)>(output, batched, static_cast<std::size_t>(k), labels, classes,
                                      shape);
  };
  switch (output.dtype()) {
    case DataType::UInt8: add(std::uint8_t{}); break;
    case DataType::UInt16: add(std::uint16_t{}); break;
    case DataType::UInt32: add(std::uint32_t{}); break;
    case DataType::UInt64: add(std::uint64_t{}); break;
    case DataType::Int8: add(std::int8_t{}); break;
    case DataType::Int16: add(std::int16_t{}); break;
    case DataType::Int32: add(std::int32_t{}); break;
    case DataType::Int64: add(std::int64_t{}); break;
    case DataType::Fp32: add(float{}); break;
    case DataType::Fp64: add(double{}); break;
    default:
      // Triton's words (server src/classification.cc).
      return Error(StatusCode::InvalidArgument,
                   std::string("class result not available for output due to unsupported type '") +
                       to_string(output.dtype()) + "'");
  }
  return Tensor::from_strings(classes, std::move(shape));
}

}  // namespace sonic::detail

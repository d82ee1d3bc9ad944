// sonic — tensors cut into rows and joined from rows along the first dimension: what merging
// requests into one batch (the client's batching, the executor's dynamic batcher) and splitting
// one batch into chunks all need.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sonic/error.hpp"
#include "sonic/request.hpp"
#include "sonic/tensor.hpp"

namespace sonic::detail {

/// The byte offset of each row boundary of a tensor with `rows` rows: rows + 1 offsets, the
/// first 0 and the last its byte size. BYTES rows vary in size: their elements' length prefixes
/// are walked. None when the bytes do not hold `rows` rows of the shape (a lying peer).
inline std::optional<std::vector<std::size_t>> row_offsets(const Tensor& tensor,
                                                           std::int64_t rows) {
  const Shape& shape = tensor.shape();
  if (shape.empty() || shape.front() != rows || rows < 0) return std::nullopt;
  std::vector<std::size_t> offsets;
  offsets.reserve(static_cast<std::size_t>(rows) + 1);
  offsets.push_back(0);
  if (tensor.dtype() != DataType::Bytes) {
    if (rows == 0) return offsets;
    if (tensor.byte_size() % static_cast<std::size_t>(rows) != 0) return std::nullopt;
    const std::size_t row_bytes = tensor.byte_size() / static_cast<std::size_t>(rows);
    for (std::int64_t r = 1; r <= rows; ++r) {
      offsets.push_back(static_cast<std::size_t>(r) * row_bytes);
    }
    return offsets;
  }
  auto elements = element_count(Shape(shape.begin() + 1, shape.end()));
  if (!elements) return std::nullopt;
  const std::uint8_t* data = tensor.data();
  const std::size_t size = tensor.byte_size();
  std::size_t at = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::size_t e = 0; e < *elements; ++e) {
      if (size - at < 4) return std::nullopt;
      const std::size_t length = std::size_t{data[at]} | std::size_t{data[at + 1]} << 8 |
                                 std::size_t{data[at + 2]} << 16 | std::size_t{data[at + 3]} << 24;
      if (size - at - 4 < length) return std::nullopt;
      at += 4 + length;
    }
    offsets.push_back(at);
  }
  if (at != size) return std::nullopt;
  return offsets;
}

/// Rows [first, first + count) of a tensor whose row boundaries are `offsets`, sharing its
/// bytes: kept alive by the slice when the tensor owns them, borrowed as the tensor borrows
/// them otherwise.
inline Tensor rows_of(const Tensor& tensor, const std::vector<std::size_t>& offsets,
                      std::int64_t first, std::int64_t count) {
  Shape shape = tensor.shape();
  shape.front() = count;
  const std::size_t begin = offsets[static_cast<std::size_t>(first)];
  const std::size_t end = offsets[static_cast<std::size_t>(first + count)];
  const std::uint8_t* data = tensor.data() + begin;
  if (tensor.borrowed())
    return Tensor::view_bytes(tensor.dtype(), std::move(shape), data, end - begin);
  return Tensor::from_shared(tensor.dtype(), std::move(shape), std::make_shared<Tensor>(tensor),
                             data, end - begin);
}

/// One tensor holding the given tensors' bytes one after the other, its first dimension (or,
/// `flat`, its only one: the element count) the sum of theirs. The parts agree on datatype and,
/// unless flat, on the dimensions past the first.
inline Tensor join_rows(const std::vector<const Tensor*>& parts, bool flat) {
  std::size_t bytes = 0;
  std::int64_t first_dimension = 0;
  for (const Tensor* part : parts) {
    bytes += part->byte_size();
    first_dimension += flat ? static_cast<std::int64_t>(element_count(part->shape()).value_or(0))
                            : part->shape().front();
  }
  auto joined = std::make_shared<std::vector<std::uint8_t>>(bytes);
  std::size_t at = 0;
  for (const Tensor* part : parts) {
    if (part->byte_size()) std::memcpy(joined->data() + at, part->data(), part->byte_size());
    at += part->byte_size();
  }
  Shape shape = flat ? Shape{first_dimension} : parts.front()->shape();
  shape.front() = first_dimension;
  const void* data = joined->data();
  return Tensor::from_shared(parts.front()->dtype(), std::move(shape), std::move(joined), data,
                             bytes);
}

/// The first dimension shared by a request's inputs, or none when an input has no dimension or
/// they disagree.
inline std::optional<std::int64_t> batch_of(const InferRequest& request) {
  std::optional<std::int64_t> batch;
  for (const auto& input : request.inputs()) {
    const Shape& shape = input.tensor.shape();
    if (shape.empty() || (batch && shape.front() != *batch)) return std::nullopt;
    batch = shape.front();
  }
  return batch;
}

}  // namespace sonic::detail

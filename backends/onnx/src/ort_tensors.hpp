// sonic tensors into ONNX Runtime values and back, copying only what the two layouts force.
#pragma once

#include <optional>
#include <vector>

#include "ort_runtime.hpp"
#include "sonic/tensor.hpp"

namespace sonic::onnx::ort {

/// ONNX Runtime's element type for a sonic datatype (String for BYTES).
ElementType element_type(DataType type);

/// The sonic datatype of an element type; none for those KServe v2 has no datatype for
/// (complex numbers, 8-bit and 4-bit floats and integers).
std::optional<DataType> data_type(ElementType type);

/// An input value for `tensor`. Numeric tensors are lent, not copied: the value reads the
/// tensor's bytes, which must outlive it (unless they are misaligned for their element type,
/// when they are copied into `scratch` first, which must outlive the value too). BYTES elements
/// are copied into a string tensor ONNX Runtime owns.
Result<ValueHandle> to_value(const Runtime& runtime, const Tensor& tensor,
                             std::vector<std::uint64_t>& scratch);

/// A tensor of `value`, a tensor output of a run. Numeric values are not copied: the tensor
/// keeps the value alive and reads its buffer. Strings are encoded as KServe BYTES elements.
Result<Tensor> to_tensor(const Runtime& runtime, ValueHandle value);

}  // namespace sonic::onnx::ort

// sonic Python bindings — numpy arrays as sonic tensors and back, without copies where the
// layout allows.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <optional>
#include <vector>

#include "sonic/tensor.hpp"

namespace sonic::python {

namespace py = pybind11;

/// Python objects a request borrows memory from. They must outlive the request: the caller
/// keeps them until its result arrived, and lets them go with the GIL held.
using KeepAlive = std::vector<py::object>;

/// The datatype KServe gives a numpy dtype; nothing for a dtype without one (complex, datetime).
/// Object, bytes ('S') and str ('U') arrays are BYTES.
std::optional<DataType> datatype_of(const py::dtype& dtype);

/// A tensor for an input value (a numpy array or anything numpy turns into one). A C-contiguous,
/// aligned, native-endian array is borrowed as it is and appended to `keep_alive`; anything else
/// is converted once into an array that is. BYTES elements (bytes, str as UTF-8) are serialised
/// into bytes the tensor owns. `declared` is the datatype an InferInput names: BF16 takes the
/// bit patterns as uint16 (numpy has no bfloat16), or float32 rounded to nearest even; otherwise
/// it must agree with the array's dtype. `declared_shape`, when given, must hold as many
/// elements as the array and replaces its shape. Throws sonic::Error(INVALID_ARGUMENT) naming
/// `name` for a value it cannot send.
Tensor input_tensor(const std::string& name, py::handle value, std::optional<DataType> declared,
                    const std::optional<Shape>& declared_shape, KeepAlive& keep_alive);

/// An output as a read-only numpy array over the tensor's bytes: no copy, and the array's base
/// keeps the received message alive. BYTES outputs are object arrays of bytes (copied, since
/// Python bytes own their memory); BF16 outputs are uint16 arrays of bit patterns.
py::object output_array(const Tensor& tensor);

}  // namespace sonic::python

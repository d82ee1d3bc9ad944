// sonic Python bindings — numpy arrays as sonic tensors and back.
#include "arrays.hpp"

#include <cmath>
#include <cstring>
#include <string_view>

namespace sonic::python {

namespace {

using Npy = py::detail::npy_api;

[[noreturn]] void refuse(const std::string& name, const std::string& why) {
  throw Error(StatusCode::InvalidArgument, "input '" + name + "': " + why);
}

/// numpy's spelling of each datatype's elements; BF16 travels as its uint16 bit patterns.
const char* numpy_format(DataType type) {
  switch (type) {
    case DataType::Bool: return "?";
    case DataType::UInt8: return "u1";
    case DataType::UInt16: return "u2";
    case DataType::UInt32: return "u4";
    case DataType::UInt64: return "u8";
    case DataType::Int8: return "i1";
    case DataType::Int16: return "i2";
    case DataType::Int32: return "i4";
    case DataType::Int64: return "i8";
    case DataType::Fp16: return "f2";
    case DataType::Bf16: return "u2";
    case DataType::Fp32: return "f4";
    case DataType::Fp64: return "f8";
    case DataType::Bytes: return "O";
  }
  return "O";
}

/// The numpy dtype of a datatype, made once per process (with the GIL held). Never freed:
/// outputs may be built until the interpreter's last moment.
const py::dtype& numpy_dtype(DataType type) {
  static auto* dtypes = [] {
    auto* made = new std::vector<py::dtype>;
    for (DataType each : kAllDataTypes) made->push_back(py::dtype(numpy_format(each)));
    return made;
  }();
  return (*dtypes)[static_cast<std::size_t>(type)];
}

bool native_byte_order(const py::dtype& dtype) {
  char order = py::detail::array_descriptor_proxy(dtype.ptr())->byteorder;
  return order == '=' || order == '|' || order == '<';  // sonic supports little-endian hosts
}

Shape shape_of(const py::array& array) {
  return Shape(array.shape(), array.shape() + array.ndim());
}

/// The UTF-8 or raw bytes of one BYTES element.
std::string_view element_bytes(const std::string& name, PyObject* item, std::size_t index) {
  if (PyBytes_Check(item)) return {PyBytes_AS_STRING(item), std::size_t(PyBytes_GET_SIZE(item))};
  if (PyByteArray_Check(item)) {
    return {PyByteArray_AS_STRING(item), std::size_t(PyByteArray_GET_SIZE(item))};
  }
  if (PyUnicode_Check(item)) {
    Py_ssize_t size = 0;
    const char* utf8 = PyUnicode_AsUTF8AndSize(item, &size);
    if (!utf8) throw py::error_already_set();
    return {utf8, std::size_t(size)};
  }
  refuse(name, "BYTES element " + std::to_string(index) + " is a " + Py_TYPE(item)->tp_name +
                   ", not bytes or str");
}

/// Serialises the elements of an object, bytes or str array into a BYTES tensor.
Tensor bytes_tensor(const std::string& name, py::array array, Shape shape) {
  if (array.dtype().kind() != 'O') array = py::array::ensure(array.attr("astype")("O"));
  array = py::array::ensure(array, py::array::c_style);
  auto** items = static_cast<PyObject**>(array.mutable_data());
  std::vector<std::string_view> elements;
  elements.reserve(static_cast<std::size_t>(array.size()));
  for (py::ssize_t i = 0; i < array.size(); ++i) {
    elements.push_back(element_bytes(name, items[i], static_cast<std::size_t>(i)));
  }
  return Tensor::from_strings(elements, std::move(shape));
}

/// float32 to bfloat16, rounding to nearest even (as PyTorch and TensorFlow convert).
Tensor bf16_from_float32(const py::array& array, Shape shape) {
  auto count = static_cast<std::size_t>(array.size());
  std::vector<std::uint16_t> bits(count);
  const auto* values = static_cast<const float*>(array.data());
  for (std::size_t i = 0; i < count; ++i) {
    std::uint32_t word;
    std::memcpy(&word, &values[i], sizeof word);
    if (std::isnan(values[i])) {
      bits[i] = static_cast<std::uint16_t>((word >> 16) | 0x40);  // stays a quiet NaN
      continue;
    }
    word += 0x7fff + ((word >> 16) & 1);
    bits[i] = static_cast<std::uint16_t>(word >> 16);
  }
  auto owner = std::make_shared<std::vector<std::uint16_t>>(std::move(bits));
  const void* data = owner->data();
  return Tensor::from_shared(DataType::Bf16, std::move(shape), std::move(owner), data,
                             count * sizeof(std::uint16_t));
}

}  // namespace

std::optional<DataType> datatype_of(const py::dtype& dtype) {
  char kind = dtype.kind();
  auto size = dtype.itemsize();
  switch (kind) {
    case 'b': return DataType::Bool;
    case 'O':
    case 'S':
    case 'U': return DataType::Bytes;
    case 'u':
      if (size == 1) return DataType::UInt8;
      if (size == 2) return DataType::UInt16;
      if (size == 4) return DataType::UInt32;
      if (size == 8) return DataType::UInt64;
      break;
    case 'i':
      if (size == 1) return DataType::Int8;
      if (size == 2) return DataType::Int16;
      if (size == 4) return DataType::Int32;
      if (size == 8) return DataType::Int64;
      break;
    case 'f':
      if (size == 2) return DataType::Fp16;
      if (size == 4) return DataType::Fp32;
      if (size == 8) return DataType::Fp64;
      break;
    default: break;
  }
  return std::nullopt;
}

Tensor input_tensor(const std::string& name, py::handle value, std::optional<DataType> declared,
                    const std::optional<Shape>& declared_shape, KeepAlive& keep_alive) {
  auto array = py::array::ensure(value);
  if (!array) {
    PyErr_Clear();
    refuse(name, std::string("a ") + Py_TYPE(value.ptr())->tp_name + " is not an array");
  }
  std::optional<DataType> found = datatype_of(array.dtype());
  if (!found) {
    refuse(name, "numpy dtype " + std::string(py::str(array.dtype())) + " has no KServe datatype");
  }
  DataType type = declared.value_or(*found);
  bool bf16_from_float = type == DataType::Bf16 && *found == DataType::Fp32;
  bool bf16_bits = type == DataType::Bf16 && *found == DataType::UInt16;
  if (type != *found && !bf16_from_float && !bf16_bits) {
    refuse(name, std::string("declared ") + to_string(type) + " but the array holds " +
                     to_string(*found) + " (numpy " + std::string(py::str(array.dtype())) + ")");
  }
  Shape shape = shape_of(array);
  if (declared_shape) {
    if (element_count(*declared_shape) != element_count(shape)) {
      refuse(name, "declared shape " + to_string(*declared_shape) + " does not hold the " +
                       std::to_string(array.size()) + " elements of the array");
    }
    shape = *declared_shape;
  }
  if (type == DataType::Bytes) return bytes_tensor(name, std::move(array), std::move(shape));

  constexpr int borrowable = Npy::NPY_ARRAY_C_CONTIGUOUS_ | Npy::NPY_ARRAY_ALIGNED_;
  if ((array.flags() & borrowable) != borrowable || !native_byte_order(array.dtype())) {
    // One conversion into a layout that can be sent as it is.
    array = py::array::ensure(
        array.attr("astype")(array.dtype().attr("newbyteorder")("="), py::arg("order") = "C"));
  }
  if (bf16_from_float) return bf16_from_float32(array, std::move(shape));
  const void* data = array.data();
  auto bytes = static_cast<std::size_t>(array.nbytes());
  keep_alive.push_back(std::move(array));
  return Tensor::view_bytes(type, std::move(shape), data, bytes);
}

py::object output_array(const Tensor& tensor) {
  tensor.check().value();  // never let numpy read past what arrived
  std::vector<py::ssize_t> shape(tensor.shape().begin(), tensor.shape().end());
  if (tensor.dtype() == DataType::Bytes) {
    auto elements = detail::decode_bytes_elements(tensor.data(), tensor.byte_size()).value();
    py::array array(numpy_dtype(DataType::Bytes), shape);
    auto** items = static_cast<PyObject**>(array.mutable_data());
    for (std::size_t i = 0; i < elements.size(); ++i) {
      PyObject* item = PyBytes_FromStringAndSize(elements[i].data(),
                                                 static_cast<Py_ssize_t>(elements[i].size()));
      if (!item) throw py::error_already_set();
      Py_XDECREF(items[i]);
      items[i] = item;
    }
    return std::move(array);
  }
  // The capsule holds a copy of the tensor, which shares ownership of the received bytes.
  auto* owner = new Tensor(tensor);
  py::capsule base(owner, [](void* held) { delete static_cast<Tensor*>(held); });
  py::array array(numpy_dtype(tensor.dtype()), std::move(shape), {}, tensor.data(), base);
  py::detail::array_proxy(array.ptr())->flags &= ~Npy::NPY_ARRAY_WRITEABLE_;
  return std::move(array);
}

}  // namespace sonic::python

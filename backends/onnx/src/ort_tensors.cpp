#include "ort_tensors.hpp"

#include <cstring>
#include <memory>
#include <string>

namespace sonic::onnx::ort {

ElementType element_type(DataType type) {
  switch (type) {
    case DataType::Bool: return ElementType::Bool;
    case DataType::UInt8: return ElementType::UInt8;
    case DataType::UInt16: return ElementType::UInt16;
    case DataType::UInt32: return ElementType::UInt32;
    case DataType::UInt64: return ElementType::UInt64;
    case DataType::Int8: return ElementType::Int8;
    case DataType::Int16: return ElementType::Int16;
    case DataType::Int32: return ElementType::Int32;
    case DataType::Int64: return ElementType::Int64;
    case DataType::Fp16: return ElementType::Float16;
    case DataType::Bf16: return ElementType::BFloat16;
    case DataType::Fp32: return ElementType::Float;
    case DataType::Fp64: return ElementType::Double;
    case DataType::Bytes: return ElementType::String;
  }
  return ElementType::Undefined;
}

std::optional<DataType> data_type(ElementType type) {
  switch (type) {
    case ElementType::Bool: return DataType::Bool;
    case ElementType::UInt8: return DataType::UInt8;
    case ElementType::UInt16: return DataType::UInt16;
    case ElementType::UInt32: return DataType::UInt32;
    case ElementType::UInt64: return DataType::UInt64;
    case ElementType::Int8: return DataType::Int8;
    case ElementType::Int16: return DataType::Int16;
    case ElementType::Int32: return DataType::Int32;
    case ElementType::Int64: return DataType::Int64;
    case ElementType::Float16: return DataType::Fp16;
    case ElementType::BFloat16: return DataType::Bf16;
    case ElementType::Float: return DataType::Fp32;
    case ElementType::Double: return DataType::Fp64;
    case ElementType::String: return DataType::Bytes;
    default: return std::nullopt;
  }
}

namespace {

// A string tensor filled from KServe BYTES elements. FillStringTensor reads C strings, so each
// element is copied once more with its terminator; an element holding a zero byte would be cut
// there, and is refused instead.
Result<ValueHandle> string_value(const Runtime& runtime, const Tensor& tensor) {
  const Api& api = runtime.api();
  auto elements = detail::decode_bytes_elements(tensor.data(), tensor.byte_size());
  if (!elements) return elements.error();
  std::vector<std::string> copies;
  std::vector<const char*> pointers;
  copies.reserve(elements->size());
  pointers.reserve(elements->size());
  for (std::size_t i = 0; i < elements->size(); ++i) {
    const std::string_view element = (*elements)[i];
    if (element.find('\0') != std::string_view::npos) {
      return Error(StatusCode::InvalidArgument,
                   "BYTES element " + std::to_string(i) +
                       " holds a zero byte, which ONNX Runtime's string tensors cannot take");
    }
    copies.emplace_back(element);
    pointers.push_back(copies.back().c_str());
  }
  OrtValue* raw = nullptr;
  const auto& shape = tensor.shape();
  if (auto ok = runtime.check(api.CreateTensorAsOrtValue(runtime.allocator(), shape.data(),
                                                         shape.size(), ElementType::String, &raw),
                              "creating a string tensor");
      !ok) {
    return ok.error();
  }
  ValueHandle value(raw, {&api});
  if (auto ok = runtime.check(api.FillStringTensor(raw, pointers.data(), pointers.size()),
                              "filling a string tensor");
      !ok) {
    return ok.error();
  }
  return value;
}

// The KServe BYTES elements of a string tensor.
Result<Tensor> string_tensor(const Runtime& runtime, const OrtValue* value, Shape shape,
                             std::size_t count) {
  const Api& api = runtime.api();
  std::size_t total = 0;
  if (auto ok = runtime.check(api.GetStringTensorDataLength(value, &total), "reading strings");
      !ok) {
    return ok.error();
  }
  std::string bytes(total, '\0');
  std::vector<std::size_t> offsets(count);
  if (auto ok = runtime.check(
          api.GetStringTensorContent(value, bytes.data(), total, offsets.data(), count),
          "reading strings");
      !ok) {
    return ok.error();
  }
  std::vector<std::string_view> elements;
  elements.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t end = i + 1 < count ? offsets[i + 1] : total;
    elements.emplace_back(bytes.data() + offsets[i], end - offsets[i]);
  }
  return Tensor::from_strings(elements, std::move(shape));
}

}  // namespace

Result<ValueHandle> to_value(const Runtime& runtime, const Tensor& tensor,
                             std::vector<std::uint64_t>& scratch) {
  if (tensor.dtype() == DataType::Bytes) return string_value(runtime, tensor);
  const Api& api = runtime.api();
  auto* data = const_cast<std::uint8_t*>(tensor.data());  // an input: ONNX Runtime only reads it
  const std::size_t size = tensor.byte_size();
  if (reinterpret_cast<std::uintptr_t>(data) % element_size(tensor.dtype()) != 0) {
    scratch.resize((size + sizeof(std::uint64_t) - 1) / sizeof(std::uint64_t));
    std::memcpy(scratch.data(), data, size);
    data = reinterpret_cast<std::uint8_t*>(scratch.data());
  }
  // A tensor with no elements may carry no bytes at all: give ONNX Runtime a valid address.
  static std::uint64_t empty = 0;
  if (size == 0) data = reinterpret_cast<std::uint8_t*>(&empty);
  OrtValue* raw = nullptr;
  const auto& shape = tensor.shape();
  if (auto ok = runtime.check(
          api.CreateTensorWithDataAsOrtValue(runtime.cpu_memory(), data, size, shape.data(),
                                             shape.size(), element_type(tensor.dtype()), &raw),
          "creating an input tensor");
      !ok) {
    return ok.error();
  }
  return ValueHandle(raw, {&api});
}

Result<Tensor> to_tensor(const Runtime& runtime, ValueHandle value) {
  const Api& api = runtime.api();
  OrtTensorTypeAndShapeInfo* raw_info = nullptr;
  if (auto ok = runtime.check(api.GetTensorTypeAndShape(value.get(), &raw_info),
                              "reading an output's shape");
      !ok) {
    return ok.error();
  }
  TensorInfoHandle info(raw_info, {&api});
  ElementType element = ElementType::Undefined;
  std::size_t rank = 0;
  std::size_t count = 0;
  if (auto ok = runtime.check(api.GetTensorElementType(raw_info, &element), "reading an output");
      !ok) {
    return ok.error();
  }
  if (auto ok = runtime.check(api.GetDimensionsCount(raw_info, &rank), "reading an output"); !ok) {
    return ok.error();
  }
  Shape shape(rank);
  if (auto ok = runtime.check(api.GetDimensions(raw_info, shape.data(), rank), "reading an output");
      !ok) {
    return ok.error();
  }
  if (auto ok =
          runtime.check(api.GetTensorShapeElementCount(raw_info, &count), "reading an output");
      !ok) {
    return ok.error();
  }
  const auto type = data_type(element);
  if (!type) {
    return Error(StatusCode::Unimplemented, "an output has ONNX element type " +
                                                std::to_string(static_cast<int>(element)) +
                                                ", which KServe v2 has no datatype for");
  }
  if (*type == DataType::Bytes) return string_tensor(runtime, value.get(), std::move(shape), count);
  void* data = nullptr;
  if (auto ok = runtime.check(api.GetTensorMutableData(value.get(), &data), "reading an output");
      !ok) {
    return ok.error();
  }
  std::shared_ptr<OrtValue> owner(value.release(), value.get_deleter());
  return Tensor::from_shared(*type, std::move(shape), std::move(owner), data,
                             count * element_size(*type));
}

}  // namespace sonic::onnx::ort

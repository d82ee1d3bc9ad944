#include "json_tensors.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <variant>
#include <vector>

#include "invalid.hpp"

namespace sonic::protocol {

namespace {

using nlohmann::json;

// The elements of a nested JSON array, in row-major order. Iterative: a client's nesting
// (a megabyte of '[') must not become the server's stack depth.
void flatten(const json& data, std::vector<const json*>& out) {
  std::vector<std::pair<const json*, std::size_t>> open{{&data, 0}};  // array, next index
  if (!data.is_array()) {
    out.push_back(&data);
    return;
  }
  while (!open.empty()) {
    auto& [array, next] = open.back();
    if (next == array->size()) {
      open.pop_back();
      continue;
    }
    const json& element = (*array)[next++];
    if (element.is_array()) {
      open.emplace_back(&element, 0);
    } else {
      out.push_back(&element);
    }
  }
}

template <typename T>
bool append_number(const json& element, std::vector<std::uint8_t>& bytes) {
  T value{};
  if constexpr (std::is_floating_point_v<T>) {
    if (!element.is_number()) return false;
    value = element.get<T>();
  } else {
    if (element.is_number_unsigned()) {
      const auto u = element.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) return false;
      value = static_cast<T>(u);
    } else if (element.is_number_integer()) {
      const auto i = element.get<std::int64_t>();
      if constexpr (std::is_unsigned_v<T>) {
        if (i < 0 || static_cast<std::uint64_t>(i) > std::numeric_limits<T>::max()) return false;
      } else {
        if (i < std::numeric_limits<T>::min() || i > std::numeric_limits<T>::max()) return false;
      }
      value = static_cast<T>(i);
    } else {
      return false;
    }
  }
  const auto* raw = reinterpret_cast<const std::uint8_t*>(&value);
  bytes.insert(bytes.end(), raw, raw + sizeof(T));
  return true;
}

// One element of `type` read from JSON into `bytes` (the wire layout); false if it is not one.
bool append_element(DataType type, const json& element, std::vector<std::uint8_t>& bytes) {
  switch (type) {
    case DataType::Bool:
      if (!element.is_boolean()) return false;
      bytes.push_back(element.get<bool>() ? 1 : 0);
      return true;
    case DataType::UInt8: return append_number<std::uint8_t>(element, bytes);
    case DataType::UInt16: return append_number<std::uint16_t>(element, bytes);
    case DataType::UInt32: return append_number<std::uint32_t>(element, bytes);
    case DataType::UInt64: return append_number<std::uint64_t>(element, bytes);
    case DataType::Int8: return append_number<std::int8_t>(element, bytes);
    case DataType::Int16: return append_number<std::int16_t>(element, bytes);
    case DataType::Int32: return append_number<std::int32_t>(element, bytes);
    case DataType::Int64: return append_number<std::int64_t>(element, bytes);
    case DataType::Fp32: return append_number<float>(element, bytes);
    case DataType::Fp64: return append_number<double>(element, bytes);
    case DataType::Bytes: {
      if (!element.is_string()) return false;
      const auto& text = element.get_ref<const std::string&>();
      if (text.size() > std::numeric_limits<std::uint32_t>::max()) return false;
      const auto length = static_cast<std::uint32_t>(text.size());
      for (int shift = 0; shift < 32; shift += 8) {
        bytes.push_back(static_cast<std::uint8_t>(length >> shift));
      }
      bytes.insert(bytes.end(), text.begin(), text.end());
      return true;
    }
    case DataType::Fp16:
    case DataType::Bf16: return false;  // refused before: see tensor_from_json()
  }
  return false;
}

std::uint64_t element_count(const Shape& shape) {
  std::uint64_t n = 1;
  for (auto d : shape) n *= static_cast<std::uint64_t>(d);
  return n;
}

}  // namespace

// A JSON parameter as a KServe parameter: a boolean, an integer (int64, or uint64 past its
// range), a double or a string; anything else is refused, in Triton's words.
Result<Parameter> parameter_from_json(const std::string& name, const json& value) {
  if (value.is_boolean()) return Parameter(value.get<bool>());
  if (value.is_number_unsigned()) {
    const auto u = value.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return Parameter(u);
    }
    return Parameter(static_cast<std::int64_t>(u));
  }
  if (value.is_number_integer()) return Parameter(value.get<std::int64_t>());
  if (value.is_number_float()) return Parameter(value.get<double>());
  if (value.is_string()) return Parameter(value.get<std::string>());
  return invalid("parameter '" + name +
                 "' has invalid type. It should be either 'int', 'bool', or 'string'.");
}

Result<Parameters> parameters_from_json(const json& object) {
  Parameters out;
  if (object.is_null()) return out;
  if (!object.is_object()) return invalid("'parameters' must be a JSON object");
  for (const auto& [name, value] : object.items()) {
    auto p = parameter_from_json(name, value);
    if (!p) return p.error();
    out.emplace(name, std::move(*p));
  }
  return out;
}

// An input's tensor from its JSON "data".
Result<Tensor> tensor_from_json(const std::string& name, DataType type, const Shape& shape,
                                const json& data) {
  if (type == DataType::Fp16 || type == DataType::Bf16) {
    // Triton's words (http_server.cc, ReadDataFromJsonHelper).
    return invalid(std::string("receiving ") + to_string(type) +
                   " data via JSON is not supported. Please use the binary data format for "
                   "input " +
                   name);
  }
  std::vector<const json*> elements;
  flatten(data, elements);
  if (elements.size() != element_count(shape)) {
    return invalid("unexpected number of elements in 'data' of input '" + name +
                   "': " + std::to_string(elements.size()) + ", its shape holds " +
                   std::to_string(element_count(shape)));
  }
  auto bytes = std::make_shared<std::vector<std::uint8_t>>();
  bytes->reserve(elements.size() * std::max<std::size_t>(1, element_size(type)));
  for (const json* element : elements) {
    if (!append_element(type, *element, *bytes)) {
      return invalid("unable to parse 'data' of input '" + name + "': expected " + to_string(type) +
                     " elements");
    }
  }
  const void* data_ptr = bytes->data();
  const std::size_t size = bytes->size();
  return Tensor::from_shared(type, shape, std::move(bytes), data_ptr, size);
}

// The JSON array of a tensor's elements, flat in row-major order.
Result<json> tensor_to_json(const Tensor& tensor) {
  const std::uint8_t* p = tensor.data();
  const std::size_t size = tensor.byte_size();
  json out = json::array();
  auto each = [&](auto zero) {
    using T = decltype(zero);
    for (std::size_t at = 0; at + sizeof(T) <= size; at += sizeof(T)) {
      T value;
      std::memcpy(&value, p + at, sizeof(T));
      out.push_back(value);
    }
  };
  switch (tensor.dtype()) {
    case DataType::Bool:
      for (std::size_t i = 0; i < size; ++i) out.push_back(p[i] != 0);
      break;
    case DataType::UInt8: each(std::uint8_t{}); break;
    case DataType::UInt16: each(std::uint16_t{}); break;
    case DataType::UInt32: each(std::uint32_t{}); break;
    case DataType::UInt64: each(std::uint64_t{}); break;
    case DataType::Int8: each(std::int8_t{}); break;
    case DataType::Int16: each(std::int16_t{}); break;
    case DataType::Int32: each(std::int32_t{}); break;
    case DataType::Int64: each(std::int64_t{}); break;
    case DataType::Fp32: each(float{}); break;
    case DataType::Fp64: each(double{}); break;
    case DataType::Bytes:
      for (auto element : tensor.string_views()) out.push_back(std::string(element));
      break;
    case DataType::Fp16:
    case DataType::Bf16:
      return Error(StatusCode::InvalidArgument,
                   std::string("sending ") + to_string(tensor.dtype()) +
                       " data via JSON is not supported: ask for the output as binary data");
  }
  return out;
}

json parameters_to_json(const Parameters& parameters) {
  json out = json::object();
  for (const auto& [name, value] : parameters) {
    std::visit([&, &key = name](const auto& v) { out[key] = v; }, value);
  }
  return out;
}

}  // namespace sonic::protocol

#include "http_infer_json.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "protocol/names.hpp"

namespace sonic::server {

namespace {

using nlohmann::json;

Error invalid(std::string message) {
  return Error(StatusCode::InvalidArgument, std::move(message));
}

// A JSON parameter as a KServe parameter: a boolean, an integer (int64, or uint64 past its
// range), a double or a string; anything else is refused, in Triton's words.
Result<Parameter> parameter_of(const std::string& name, const json& value) {
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

// Tensors in shared memory are the gRPC port's only so far: refused here rather than answered
// as if the parameter were not there (an output would come back inline, its region untouched).
Result<void> refuse_shared_memory(const std::string& tensor, const Parameters& parameters) {
  if (parameters.count(protocol::kSharedMemoryRegion) == 0) return {};
  return Error(StatusCode::Unimplemented,
               "tensor '" + tensor +
                   "' names a shared memory region: sonic-server takes shared memory tensors over "
                   "gRPC only; send the data in the HTTP request");
}

Result<Parameters> parameters_of(const json& object) {
  Parameters out;
  if (object.is_null()) return out;
  if (!object.is_object()) return invalid("'parameters' must be a JSON object");
  for (const auto& [name, value] : object.items()) {
    auto p = parameter_of(name, value);
    if (!p) return p.error();
    out.emplace(name, std::move(*p));
  }
  return out;
}

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
    case DataType::Bf16: return false;  // refused before: see json_tensor()
  }
  return false;
}

std::uint64_t element_count(const Shape& shape) {
  std::uint64_t n = 1;
  for (auto d : shape) n *= static_cast<std::uint64_t>(d);
  return n;
}

// An input's tensor from its JSON "data".
Result<Tensor> json_tensor(const std::string& name, DataType type, const Shape& shape,
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
Result<json> json_data(const Tensor& tensor) {
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

json parameters_json(const Parameters& parameters) {
  json out = json::object();
  for (const auto& [name, value] : parameters) {
    std::visit([&, &key = name](const auto& v) { out[key] = v; }, value);
  }
  return out;
}

}  // namespace

Result<HttpInferRequest> decode_http_infer(const std::string& model, const std::string& version,
                                           std::shared_ptr<const void> owner, std::string_view body,
                                           std::optional<std::size_t> json_length) {
  const std::size_t header_size = json_length.value_or(body.size());
  if (header_size > body.size()) {
    return invalid("Inference-Header-Content-Length " + std::to_string(header_size) +
                   " is past the body's " + std::to_string(body.size()) + " bytes");
  }
  json header = json::parse(body.data(), body.data() + header_size, nullptr, false);
  if (header.is_discarded() || !header.is_object()) {
    return invalid("failed to parse the request JSON buffer");
  }
  HttpInferRequest out;
  out.request = InferRequest(model, version);
  if (auto id = header.find("id"); id != header.end()) {
    if (!id->is_string()) return invalid("'id' must be a string");
    out.request.id(id->get<std::string>());
  }
  if (auto params = header.find("parameters"); params != header.end()) {
    auto parsed = parameters_of(*params);
    if (!parsed) return parsed.error();
    for (auto& [name, value] : *parsed) {
      if (name == "binary_data_output") {
        out.binary_outputs = std::holds_alternative<bool>(value) && std::get<bool>(value);
        continue;  // the frontend's, not the model's
      }
      out.request.parameter(name, std::move(value));
    }
  }
  auto inputs = header.find("inputs");
  if (inputs == header.end() || !inputs->is_array()) {
    return invalid("the request JSON must have an 'inputs' array");
  }
  std::size_t binary_at = header_size;  // where the next binary input begins
  for (const auto& input : *inputs) {
    if (!input.is_object()) return invalid("each of 'inputs' must be a JSON object");
    const auto name = input.value("name", std::string());
    if (name.empty()) return invalid("an input has no 'name'");
    const auto datatype = input.value("datatype", std::string());
    const auto type = parse_datatype(datatype);
    if (!type) return invalid("input '" + name + "' has an unknown datatype '" + datatype + "'");
    auto shape_json = input.find("shape");
    if (shape_json == input.end() || !shape_json->is_array()) {
      return invalid("input '" + name + "' has no 'shape' array");
    }
    Shape shape;
    for (const auto& d : *shape_json) {
      if (!d.is_number_integer() || d.get<std::int64_t>() < 0) {
        return invalid("input '" + name + "' has a shape that is not non-negative integers");
      }
      shape.push_back(d.get<std::int64_t>());
    }
    Parameters tensor_parameters;
    if (auto params = input.find("parameters"); params != input.end()) {
      auto parsed = parameters_of(*params);
      if (!parsed) return parsed.error();
      tensor_parameters = std::move(*parsed);
    }
    if (auto refused = refuse_shared_memory(name, tensor_parameters); !refused) {
      return refused.error();
    }
    auto binary_size = tensor_parameters.find("binary_data_size");
    if (binary_size != tensor_parameters.end()) {
      const auto* n = std::get_if<std::int64_t>(&binary_size->second);
      if (!n || *n < 0) return invalid("input '" + name + "': binary_data_size must be >= 0");
      const auto bytes = static_cast<std::size_t>(*n);
      if (bytes > body.size() - binary_at) {
        return invalid("unexpected total byte size " + std::to_string(bytes) + " for input '" +
                       name + "': the body holds " + std::to_string(body.size() - binary_at) +
                       " bytes of binary data past what earlier inputs took");
      }
      // A view into the body where its elements are aligned (no copy); else a copy, as the
      // JSON before it may have any length.
      const char* at = body.data() + binary_at;
      const std::size_t align = std::max<std::size_t>(1, element_size(*type));
      Tensor tensor = reinterpret_cast<std::uintptr_t>(at) % align == 0
                          ? Tensor::from_shared(*type, std::move(shape), owner, at, bytes)
                          : Tensor::copy_bytes(*type, std::move(shape), at, bytes);
      binary_at += bytes;
      tensor_parameters.erase(binary_size);
      out.request.input(name, std::move(tensor), std::move(tensor_parameters));
      continue;
    }
    auto data = input.find("data");
    if (data == input.end())
      return invalid("input '" + name + "' has neither 'data' nor binary data");
    auto tensor = json_tensor(name, *type, shape, *data);
    if (!tensor) return tensor.error();
    out.request.input(name, std::move(*tensor), std::move(tensor_parameters));
  }
  if (auto outputs = header.find("outputs"); outputs != header.end()) {
    if (!outputs->is_array()) return invalid("'outputs' must be an array");
    for (const auto& output : *outputs) {
      const auto name = output.is_object() ? output.value("name", std::string()) : std::string();
      if (name.empty()) return invalid("an output has no 'name'");
      Parameters parameters;
      if (auto params = output.find("parameters"); params != output.end()) {
        auto parsed = parameters_of(*params);
        if (!parsed) return parsed.error();
        parameters = std::move(*parsed);
      }
      if (auto refused = refuse_shared_memory(name, parameters); !refused) return refused.error();
      if (auto binary = parameters.find("binary_data"); binary != parameters.end()) {
        out.binary_output[name] =
            std::holds_alternative<bool>(binary->second) && std::get<bool>(binary->second);
        parameters.erase(binary);
      }
      out.request.output(name, std::move(parameters));
    }
  }
  return out;
}

Result<HttpInferBody> encode_http_infer(const InferResult& result, const HttpInferRequest& asked) {
  json header = json::object();
  header["model_name"] = result.model_name();
  header["model_version"] = result.model_version();
  if (!result.request_id().empty()) header["id"] = result.request_id();
  if (!result.parameters().empty()) header["parameters"] = parameters_json(result.parameters());
  json outputs = json::array();
  std::vector<const Tensor*> binary;
  for (const auto& out : result.outputs()) {
    json entry = json::object();
    entry["name"] = out.name;
    entry["datatype"] = to_string(out.tensor.dtype());
    entry["shape"] = out.tensor.shape();
    json parameters = parameters_json(out.parameters);
    auto chosen = asked.binary_output.find(out.name);
    const bool as_binary =
        chosen == asked.binary_output.end() ? asked.binary_outputs : chosen->second;
    if (as_binary) {
      parameters["binary_data_size"] = out.tensor.byte_size();
      binary.push_back(&out.tensor);
    } else {
      auto data = json_data(out.tensor);
      if (!data) return data.error();
      entry["data"] = std::move(*data);
    }
    if (!parameters.empty()) entry["parameters"] = std::move(parameters);
    outputs.push_back(std::move(entry));
  }
  header["outputs"] = std::move(outputs);
  HttpInferBody answer{header.dump(), std::nullopt};
  if (!binary.empty()) {
    answer.json_length = answer.body.size();
    for (const Tensor* tensor : binary) {
      answer.body.append(reinterpret_cast<const char*>(tensor->data()), tensor->byte_size());
    }
  }
  return answer;
}

}  // namespace sonic::server

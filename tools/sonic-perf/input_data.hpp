// sonic-perf — --input-data FILE.json, in perf_analyzer's format, so that the files Triton users
// already have work unchanged. What perf_analyzer's docs/input_data.md specifies, and is read
// here: {"data": [STEP, ...], "validation_data": [STEP, ...]}, requests cycle through the steps
// round-robin; a STEP maps each input (or, in validation_data, output) to its values for one
// batch row, flattened in row-major order, given as a JSON array, as {"b64": "..."} (the raw
// little-endian bytes; for BYTES, each element a 4-byte length then its bytes), or as
// {"content": ARRAY or {"b64": ...}, "shape": [...]} where the shape (without the batch
// dimension) fills the model's variable dimensions; validation_data entries align with data's.
// For a sequence model a sequence sends the steps in order (sequences.hpp); several data streams
// (data as an array of arrays, one per sequence) are refused.
#pragma once

#include <sonic/sonic.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "command_line.hpp"
#include "half_float.hpp"
#include "protocol/grpc_wire.hpp"
#include "tensor_spec.hpp"

namespace sonic::perf {

/// One tensor of a step: its bytes for one batch row, and the shape the file gives, if any.
struct StepTensor {
  std::string name;
  DataType dtype = DataType::Fp32;
  std::vector<std::uint8_t> bytes;  ///< BYTES: length-prefixed elements, as on the wire
  std::size_t elements = 0;
  std::optional<Shape> shape;  ///< "shape" of the file (batch dimension excluded)
};

/// One step of the file: the tensors of a request, and the outputs it must produce (empty when
/// the file has no validation_data).
struct DataStep {
  std::vector<StepTensor> inputs;
  std::vector<StepTensor> expected;
};

/// What a tensor of the file must be: its datatype, from the model's metadata.
using DatatypeOf = std::map<std::string, DataType>;

namespace input_data_detail {

using nlohmann::json;

[[noreturn]] inline void fail(const std::string& where, const std::string& what) {
  throw tools::UsageError("--input-data " + where + ": " + what);
}

// "b64" contents, decoded as the gRPC wire decodes base64 (padding optional).
inline std::vector<std::uint8_t> base64(const std::string& where, const std::string& text) {
  auto bytes = protocol::base64_decode(text);
  if (!bytes) fail(where, "is not base64 (the standard alphabet, padded or not)");
  return {bytes->begin(), bytes->end()};
}

// One integer of type T from a JSON number, refused when it does not fit.
template <typename T>
void append_integer(std::vector<std::uint8_t>& out, const std::string& where, const json& value) {
  bool fits = false;
  if (value.is_number_unsigned()) {
    fits = value.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<T>::max());
  } else if (value.is_number_integer()) {
    auto v = value.get<std::int64_t>();
    fits = v >= static_cast<std::int64_t>(std::numeric_limits<T>::min()) &&
           (v < 0 || static_cast<std::uint64_t>(v) <=
                         static_cast<std::uint64_t>(std::numeric_limits<T>::max()));
  }
  if (!fits) fail(where, value.dump() + " is not " + to_string(datatype_of<T>));
  tools::append_element(out, value.is_number_unsigned()
                                 ? static_cast<T>(value.get<std::uint64_t>())
                                 : static_cast<T>(value.get<std::int64_t>()));
}

// One element of `type` from a JSON value.
inline void append_json_value(std::vector<std::uint8_t>& out, const std::string& where,
                              DataType type, const json& value) {
  if (type == DataType::Bytes) {
    if (!value.is_string()) fail(where, value.dump() + " is not a string");
    const auto& text = value.get_ref<const std::string&>();
    tools::append_element(out, static_cast<std::uint32_t>(text.size()));
    out.insert(out.end(), text.begin(), text.end());
    return;
  }
  if (type == DataType::Bool) {
    if (!value.is_boolean() && !value.is_number_integer())
      fail(where, value.dump() + " is not BOOL");
    out.push_back(value.is_boolean() ? value.get<bool>() : value.get<std::int64_t>() != 0);
    return;
  }
  switch (type) {
    case DataType::UInt8: return append_integer<std::uint8_t>(out, where, value);
    case DataType::UInt16: return append_integer<std::uint16_t>(out, where, value);
    case DataType::UInt32: return append_integer<std::uint32_t>(out, where, value);
    case DataType::UInt64: return append_integer<std::uint64_t>(out, where, value);
    case DataType::Int8: return append_integer<std::int8_t>(out, where, value);
    case DataType::Int16: return append_integer<std::int16_t>(out, where, value);
    case DataType::Int32: return append_integer<std::int32_t>(out, where, value);
    case DataType::Int64: return append_integer<std::int64_t>(out, where, value);
    default: break;
  }
  if (!value.is_number()) fail(where, value.dump() + " is not a number");
  double number = value.get<double>();
  switch (type) {
    case DataType::Fp16:
      return tools::append_element(out, tools::float_to_half(static_cast<float>(number)));
    case DataType::Bf16:
      return tools::append_element(out, tools::float_to_bf16(static_cast<float>(number)));
    case DataType::Fp32: return tools::append_element(out, static_cast<float>(number));
    default: return tools::append_element(out, number);
  }
}

// The tensor of one entry of a step.
inline StepTensor read_tensor(const std::string& where, const std::string& name, DataType type,
                              const json& entry) {
  StepTensor tensor;
  tensor.name = name;
  tensor.dtype = type;
  const json* content = &entry;
  if (entry.is_object() && entry.contains("content")) {
    content = &entry.at("content");
    if (entry.contains("shape")) {
      const json& shape = entry.at("shape");
      if (!shape.is_array()) fail(where, "\"shape\" must be an array");
      tensor.shape.emplace();
      for (const auto& dim : shape) {
        if (!dim.is_number_integer() || dim.get<std::int64_t>() < 0) {
          fail(where, "\"shape\" must hold whole numbers of at least 0");
        }
        tensor.shape->push_back(dim.get<std::int64_t>());
      }
    }
  }
  if (content->is_object() && content->contains("b64")) {
    const json& text = content->at("b64");
    if (!text.is_string()) fail(where, "\"b64\" must be a string");
    tensor.bytes = base64(where, text.get<std::string>());
    if (type == DataType::Bytes) {
      auto elements = detail::decode_bytes_elements(tensor.bytes.data(), tensor.bytes.size());
      if (!elements) fail(where, "BYTES b64 content: " + elements.error().message());
      tensor.elements = elements->size();
    } else {
      std::size_t width = element_size(type);
      if (tensor.bytes.size() % width != 0) {
        fail(where, std::to_string(tensor.bytes.size()) + " bytes of b64 content are not whole " +
                        to_string(type) + " elements");
      }
      tensor.elements = tensor.bytes.size() / width;
    }
    return tensor;
  }
  if (!content->is_array()) {
    fail(where,
         "expected an array of values, {\"b64\": ...} or {\"content\": ..., \"shape\": ...}");
  }
  for (const auto& value : *content) {
    if (value.is_array()) fail(where, "values must be flattened (row-major), not nested");
    append_json_value(tensor.bytes, where, type, value);
  }
  tensor.elements = content->size();
  return tensor;
}

// The tensors of one step, each named and typed by `types`.
inline std::vector<StepTensor> read_step(const std::string& where, const json& step,
                                         const DatatypeOf& types, const char* kind) {
  if (step.is_array()) {
    fail(where, "data streams (arrays of steps, for sequence models) are not supported");
  }
  if (!step.is_object()) fail(where, "each step must be an object of " + std::string(kind) + "s");
  std::vector<StepTensor> tensors;
  for (const auto& [name, entry] : step.items()) {
    auto type = types.find(name);
    if (type == types.end()) {
      std::string known;
      for (const auto& [n, t] : types) known += (known.empty() ? "" : ", ") + n;
      fail(where, "the model has no " + std::string(kind) + " '" + name + "' (" + kind +
                      "s: " + known + ")");
    }
    tensors.push_back(
        read_tensor(where + " " + kind + " '" + name + "'", name, type->second, entry));
  }
  return tensors;
}

}  // namespace input_data_detail

/// The steps of a perf_analyzer input data file; throws tools::UsageError naming the file, the
/// step and the tensor for anything it cannot use.
inline std::vector<DataStep> read_input_data(const std::string& path, const DatatypeOf& inputs,
                                             const DatatypeOf& outputs) {
  using namespace input_data_detail;
  std::ifstream file(path);
  if (!file) fail(path, "cannot be read");
  json document;
  try {
    document = json::parse(file);
  } catch (const json::exception& e) {
    fail(path, std::string("is not JSON: ") + e.what());
  }
  if (!document.is_object() || !document.contains("data") || !document.at("data").is_array() ||
      document.at("data").empty()) {
    fail(path, "expected {\"data\": [STEP, ...]} with at least one step");
  }
  const json& data = document.at("data");
  const json* validation =
      document.contains("validation_data") ? &document.at("validation_data") : nullptr;
  if (validation && (!validation->is_array() || validation->size() != data.size())) {
    fail(path, "\"validation_data\" must be an array with one entry per step of \"data\"");
  }
  std::vector<DataStep> steps;
  for (std::size_t i = 0; i < data.size(); ++i) {
    std::string where = path + " step " + std::to_string(i);
    DataStep step;
    step.inputs = read_step(where, data[i], inputs, "input");
    if (validation) step.expected = read_step(where, (*validation)[i], outputs, "output");
    steps.push_back(std::move(step));
  }
  return steps;
}

}  // namespace sonic::perf

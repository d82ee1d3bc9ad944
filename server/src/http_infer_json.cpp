#include "http_infer_json.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "protocol/invalid.hpp"
#include "protocol/json_tensors.hpp"
#include "protocol/names.hpp"

namespace sonic::server {

namespace {

using protocol::invalid;

using nlohmann::json;
using protocol::parameters_from_json;
using protocol::parameters_to_json;

bool names_region(const Parameters& parameters) {
  return parameters.count(protocol::kSharedMemoryRegion) != 0;
}

// Triton's ValidateInputContentType (server src/http_server.cc): an input sets exactly one of
// "data", a binary_data_size parameter and a shared_memory_region parameter, in its words.
Result<void> check_input_content(const json& input, const Parameters& parameters) {
  const bool has_data = input.contains("data");
  const bool has_binary = parameters.count("binary_data_size") != 0;
  const bool has_shm = names_region(parameters);
  const int set = int(has_data) + int(has_binary) + int(has_shm);
  if (set == 1) return {};
  std::string message =
      "Input must set only one of the following fields: 'data', 'binary_data_size' in "
      "'parameters', 'shared_memory_region' in 'parameters'. But";
  if (set == 0) return invalid(message + " no field is set");
  message += " set";
  if (has_data) message += " 'data'";
  if (has_binary) message += " 'binary_data_size'";
  if (has_shm) message += " 'shared_memory_region'";
  return invalid(message);
}

// Triton's ValidateOutputParameter: an output written to a region cannot also be asked for as
// binary data or as a classification (whose results are not written to shared memory).
Result<void> check_output_parameters(const Parameters& parameters) {
  if (!names_region(parameters)) return {};
  if (parameters.count("classification")) {
    return invalid("Output can't set both 'shared_memory_region' and 'classification'");
  }
  auto binary = parameters.find("binary_data");
  if (binary != parameters.end() && std::holds_alternative<bool>(binary->second) &&
      std::get<bool>(binary->second)) {
    return invalid("Output can't set both 'shared_memory_region' and 'binary_data'");
  }
  return {};
}

// decode_http_infer(), for a body whose JSON may be of any shape: nlohmann/json throws where
// a value is not of the type read.
Result<HttpInferRequest> decode_body(const std::string& model, const std::string& version,
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
    auto parsed = parameters_from_json(*params);
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
      auto parsed = parameters_from_json(*params);
      if (!parsed) return parsed.error();
      tensor_parameters = std::move(*parsed);
    }
    if (auto ok = check_input_content(input, tensor_parameters); !ok) return ok.error();
    if (names_region(tensor_parameters)) {
      // Its bytes are in a region: the server binds it (SharedMemoryRegistry::bind) once the
      // request is whole, as the gRPC port does.
      out.request.input(name, Tensor::descriptor(*type, std::move(shape)),
                        std::move(tensor_parameters));
      continue;
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
    auto tensor = protocol::tensor_from_json(name, *type, shape, *data);
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
        auto parsed = parameters_from_json(*params);
        if (!parsed) return parsed.error();
        parameters = std::move(*parsed);
      }
      if (auto ok = check_output_parameters(parameters); !ok) return ok.error();
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

}  // namespace

Result<HttpInferRequest> decode_http_infer(const std::string& model, const std::string& version,
                                           std::shared_ptr<const void> owner, std::string_view body,
                                           std::optional<std::size_t> json_length) {
  // JSON of the wrong shape makes nlohmann/json throw where the decoder reads it.
  try {
    return decode_body(model, version, std::move(owner), body, json_length);
  } catch (const json::exception& e) {
    return invalid(std::string("malformed request JSON: ") + e.what());
  }
}

Result<HttpInferBody> encode_http_infer(const InferResult& result, const HttpInferRequest& asked) {
  json header = json::object();
  header["model_name"] = result.model_name();
  header["model_version"] = result.model_version();
  if (!result.request_id().empty()) header["id"] = result.request_id();
  if (!result.parameters().empty()) header["parameters"] = parameters_to_json(result.parameters());
  json outputs = json::array();
  std::vector<Tensor> binary;
  for (const auto& out : result.outputs()) {
    json entry = json::object();
    entry["name"] = out.name;
    entry["datatype"] = to_string(out.tensor.dtype());
    entry["shape"] = out.tensor.shape();
    if (names_region(out.parameters)) {
      // Written to the region the request named (SharedMemoryRegistry::complete): Triton's
      // entry for such an output is its name, datatype and shape, with neither data nor a
      // binary_data_size (its OutputInfo::SHM kind adds none), and the placement is not
      // repeated: the client knows where it asked for it.
      Parameters rest = out.parameters;
      for (const char* key : {protocol::kSharedMemoryRegion, protocol::kSharedMemoryByteSize,
                              protocol::kSharedMemoryOffset}) {
        rest.erase(key);
      }
      if (!rest.empty()) entry["parameters"] = parameters_to_json(rest);
      outputs.push_back(std::move(entry));
      continue;
    }
    json parameters = parameters_to_json(out.parameters);
    auto chosen = asked.binary_output.find(out.name);
    const bool as_binary =
        chosen == asked.binary_output.end() ? asked.binary_outputs : chosen->second;
    if (as_binary) {
      parameters["binary_data_size"] = out.tensor.byte_size();
      binary.push_back(out.tensor.borrowed() ? out.tensor.to_owned() : out.tensor);
    } else {
      auto data = protocol::tensor_to_json(out.tensor);
      if (!data) return data.error();
      entry["data"] = std::move(*data);
    }
    if (!parameters.empty()) entry["parameters"] = std::move(parameters);
    outputs.push_back(std::move(entry));
  }
  header["outputs"] = std::move(outputs);
  HttpInferBody answer{header.dump(), std::nullopt, std::move(binary)};
  if (!answer.binary.empty()) answer.json_length = answer.body.size();
  return answer;
}

}  // namespace sonic::server

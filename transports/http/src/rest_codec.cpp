#include "rest_codec.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <utility>

#include "protocol/control_routes.hpp"
#include "protocol/json_tensors.hpp"
#include "protocol/names.hpp"
#include "protocol/proto_json.hpp"

namespace sonic::http {

namespace {

using nlohmann::json;
using protocol::percent_encoded;

Error internal(std::string message) { return Error(StatusCode::Internal, std::move(message)); }

bool in_shared_memory(const Parameters& parameters) {
  return parameters.count("shared_memory_region") != 0;
}

// The request message of `method` as JSON (protobuf's mapping, field names as declared).
Result<json> request_json(ControlMethod method, std::string_view request) {
  auto text =
      protocol::message_to_json(std::string(protocol::spec_of(method).request_type), request);
  if (!text) return Error(StatusCode::InvalidArgument, text.error().message());
  return json::parse(*text);
}

std::string text_field(const json& object, const char* name) {
  auto it = object.find(name);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A protobuf JSON int64 (a string) or number as a JSON number, as Triton's REST bodies have it.
json number_field(const json& object, const char* name) {
  auto it = object.find(name);
  if (it == object.end()) return 0;
  if (it->is_string()) return std::stoll(it->get<std::string>());
  return *it;
}

// ModelRepositoryParameter {bool_param | int64_param | string_param | bytes_param} as the plain
// JSON value Triton's HTTP load takes ("config": a string; "file:..." contents in base64).
json repository_parameters(const json& parameters) {
  json out = json::object();
  for (const auto& [name, value] : parameters.items()) {
    if (value.contains("int64_param")) {
      out[name] = number_field(value, "int64_param");
    } else if (!value.empty()) {
      out[name] = value.begin().value();
    }
  }
  return out;
}

RestRequest get(std::string target) { return {"GET", std::move(target), {}, {}, 0}; }
RestRequest post(std::string target, const json& body) {
  return {"POST", std::move(target), body.dump(), {}, 0};
}

// A shared memory registration's body, as Triton's HandleSystemSharedMemory and
// HandleCudaSharedMemory read it.
json registration_body(bool cuda, const json& request) {
  json body = json::object();
  if (cuda) {
    body["raw_handle"] = {{"b64", text_field(request, "raw_handle")}};
    body["device_id"] = number_field(request, "device_id");
  } else {
    body["key"] = text_field(request, "key");
    body["offset"] = number_field(request, "offset");
  }
  body["byte_size"] = number_field(request, "byte_size");
  return body;
}

// The protobuf response of `type` written by `body` (protobuf's JSON mapping).
// TraceSettingRequest as Triton's trace route takes it (src/http_server.cc HandleTrace): a
// model's or the global settings, trace_level as a list, the others as one string, null to
// clear one; no settings only reads them.
json trace_body(const json& request) {
  auto settings = request.find("settings");
  if (settings == request.end() || !settings->is_object() || settings->empty()) return nullptr;
  json body = json::object();
  for (const auto& [key, setting] : settings->items()) {
    json values = setting.is_object() ? setting.value("value", json::array()) : json::array();
    if (!values.is_array() || values.empty()) {
      body[key] = nullptr;
    } else if (key == "trace_level") {
      body[key] = std::move(values);
    } else {
      body[key] = values.front();
    }
  }
  return body;
}

// LogSettingsRequest as Triton's logging route takes it (HandleLogging): each setting's value
// (a boolean, log_verbose_level a number, log_file and log_format strings); none only reads.
json log_body(const json& request) {
  auto settings = request.find("settings");
  if (settings == request.end() || !settings->is_object() || settings->empty()) return nullptr;
  json body = json::object();
  for (const auto& [key, setting] : settings->items()) {
    if (setting.is_object() && !setting.empty()) body[key] = setting.begin().value();
  }
  return body;
}

// Triton's trace settings answer, {setting: "value" or ["values"]}, as TraceSettingResponse.
json trace_settings(const json& answer) {
  json settings = json::object();
  if (!answer.is_object()) return settings;
  for (const auto& [key, value] : answer.items()) {
    json values = json::array();
    for (const auto& item : value.is_array() ? value : json::array({value})) {
      if (!item.is_null()) values.push_back(item.is_string() ? item : json(item.dump()));
    }
    settings[key] = {{"value", std::move(values)}};
  }
  return settings;
}

// Triton's log settings answer, {setting: value}, as LogSettingsResponse.
json log_settings(const json& answer) {
  json settings = json::object();
  if (!answer.is_object()) return settings;
  for (const auto& [key, value] : answer.items()) {
    if (value.is_boolean()) {
      settings[key] = {{"bool_param", value}};
    } else if (value.is_number_unsigned()) {
      settings[key] = {{"uint32_param", value}};
    } else if (value.is_string()) {
      settings[key] = {{"string_param", value}};
    }
  }
  return settings;
}

// `method`'s protobuf response, written by `body` (protobuf's JSON mapping).
Result<std::string> response_of(ControlMethod method, const json& body) {
  const std::string type(protocol::spec_of(method).response_type);
  auto bytes = protocol::message_from_json(type, body.dump());
  if (!bytes) return internal("malformed " + type + ": " + bytes.error().message());
  return bytes;
}

// Triton answers a status query with an array of regions; the protobuf has a map by name.
json regions_by_name(const json& regions) {
  json out = json::object();
  if (!regions.is_array()) return out;
  for (const auto& region : regions) {
    if (region.is_object()) out[text_field(region, "name")] = region;
  }
  return out;
}

// decode_rest_infer(), for an answer whose JSON may be of any shape.
Result<InferResult> decode_outputs(const json& answer,
                                   std::vector<std::shared_ptr<std::uint8_t>> parts,
                                   const std::vector<std::size_t>& sizes,
                                   const std::vector<RequestedOutput>* placed);

// The parameters that place a tensor in a region, taken from the request's output `name` when
// the request placed it there: Triton's answer names no placement (its SHM outputs get no
// parameters), and sonic-server's repeats none.
void take_placement(const std::string& name, const std::vector<RequestedOutput>* placed,
                    Parameters& parameters) {
  if (!placed) return;
  for (const auto& output : *placed) {
    if (output.name != name) continue;
    for (const char* key : {protocol::kSharedMemoryRegion, protocol::kSharedMemoryByteSize,
                            protocol::kSharedMemoryOffset}) {
      auto it = output.parameters.find(key);
      if (it != output.parameters.end()) parameters[key] = it->second;
    }
  }
}

}  // namespace

std::string model_target(std::string_view name, std::string_view version) {
  std::string target = "/v2/models/" + percent_encoded(name);
  if (!version.empty()) target += "/versions/" + percent_encoded(version);
  return target;
}

RestRequest encode_rest_infer(const InferRequest& request,
                              std::optional<std::int64_t> client_timeout_us) {
  RestRequest out;
  out.method = "POST";
  out.target = model_target(request.model_name(), request.model_version()) + "/infer";
  json body = json::object();
  if (!request.request_id().empty()) body["id"] = request.request_id();
  json parameters = protocol::parameters_to_json(request.parameters());
  parameters["binary_data_output"] = true;
  if (client_timeout_us) parameters[protocol::kClientTimeoutParameter] = *client_timeout_us;
  body["parameters"] = std::move(parameters);
  json inputs = json::array();
  for (const auto& input : request.inputs()) {
    json entry = {{"name", input.name},
                  {"shape", input.tensor.shape()},
                  {"datatype", to_string(input.tensor.dtype())}};
    json input_parameters = protocol::parameters_to_json(input.parameters);
    if (!in_shared_memory(input.parameters)) {
      input_parameters["binary_data_size"] = input.tensor.byte_size();
      out.binary.push_back({input.tensor.data(), input.tensor.byte_size()});
      out.binary_bytes += input.tensor.byte_size();
    }
    if (!input_parameters.empty()) entry["parameters"] = std::move(input_parameters);
    inputs.push_back(std::move(entry));
  }
  body["inputs"] = std::move(inputs);
  if (!request.outputs().empty()) {
    json outputs = json::array();
    for (const auto& output : request.outputs()) {
      json output_parameters = protocol::parameters_to_json(output.parameters);
      // An output placed in shared memory has no bytes on the wire to ask for.
      if (!in_shared_memory(output.parameters)) output_parameters["binary_data"] = true;
      outputs.push_back({{"name", output.name}, {"parameters", std::move(output_parameters)}});
    }
    body["outputs"] = std::move(outputs);
  }
  out.json = body.dump();
  return out;
}

Result<json> parse_rest_answer(std::string_view text) {
  json answer = json::parse(text.begin(), text.end(), nullptr, false);
  if (answer.is_discarded() || !answer.is_object()) {
    return internal("the inference answer's JSON is malformed");
  }
  return answer;
}

Result<std::vector<std::size_t>> binary_layout(const json& answer, std::size_t binary_bytes) {
  std::vector<std::size_t> sizes;
  std::size_t total = 0;
  auto outputs = answer.find("outputs");
  if (outputs != answer.end() && outputs->is_array()) {
    for (const auto& output : *outputs) {
      if (!output.is_object()) return internal("an output of the answer is not an object");
      auto parameters = output.find("parameters");
      if (parameters == output.end() || !parameters->is_object()) continue;
      auto size = parameters->find("binary_data_size");
      if (size == parameters->end()) continue;
      if (!size->is_number_unsigned() || size->get<std::uint64_t>() > binary_bytes - total) {
        return internal("an output's binary_data_size runs past the answer's " +
                        std::to_string(binary_bytes) + " bytes of binary data");
      }
      sizes.push_back(size->get<std::size_t>());
      total += sizes.back();
    }
  }
  if (total != binary_bytes) {
    return internal("the answer's outputs hold " + std::to_string(total) +
                    " bytes of binary data, but " + std::to_string(binary_bytes) + " came");
  }
  return sizes;
}

Result<InferResult> decode_rest_infer(const json& answer,
                                      std::vector<std::shared_ptr<std::uint8_t>> parts,
                                      const std::vector<std::size_t>& sizes,
                                      const std::vector<RequestedOutput>* placed) {
  // JSON of the wrong shape (a name that is a number, say) makes nlohmann/json throw where it
  // is read: an answer like that is a malformed one, not a reason to unwind a network thread.
  try {
    return decode_outputs(answer, std::move(parts), sizes, placed);
  } catch (const json::exception& e) {
    return internal(std::string("malformed inference answer: ") + e.what());
  }
}

namespace {

Result<InferResult> decode_outputs(const json& answer,
                                   std::vector<std::shared_ptr<std::uint8_t>> parts,
                                   const std::vector<std::size_t>& sizes,
                                   const std::vector<RequestedOutput>* placed) {
  auto parameters = protocol::parameters_from_json(answer.value("parameters", json()));
  if (!parameters) return internal("the answer's " + parameters.error().message());
  std::vector<NamedTensor> outputs;
  std::size_t next_part = 0;
  for (const auto& output : answer.value("outputs", json::array())) {
    const std::string name = output.value("name", std::string());
    const auto type = parse_datatype(output.value("datatype", std::string()));
    if (name.empty() || !type) return internal("an output of the answer has no name or datatype");
    Shape shape;
    for (const auto& d : output.value("shape", json::array())) {
      if (!d.is_number_integer()) return internal("output '" + name + "' has a malformed shape");
      shape.push_back(d.get<std::int64_t>());
    }
    auto tensor_parameters = protocol::parameters_from_json(output.value("parameters", json()));
    if (!tensor_parameters)
      return internal("output '" + name + "': " + tensor_parameters.error().message());
    Tensor tensor = Tensor::descriptor(*type, shape);
    if (tensor_parameters->erase("binary_data_size") != 0) {
      if (next_part == parts.size()) return internal("output '" + name + "' has no binary data");
      const std::size_t size = sizes[next_part];
      const std::uint8_t* data = parts[next_part].get();
      tensor =
          Tensor::from_shared(*type, std::move(shape), std::move(parts[next_part]), data, size);
      ++next_part;
    } else if (auto data = output.find("data"); data != output.end()) {
      auto converted = protocol::tensor_from_json(name, *type, shape, *data);
      if (!converted) return internal("the answer's " + converted.error().message());
      tensor = std::move(*converted);
    } else if (!in_shared_memory(*tensor_parameters)) {
      // No bytes: an output the server wrote to the region the request named.
      take_placement(name, placed, *tensor_parameters);
      if (!in_shared_memory(*tensor_parameters)) {
        return internal("output '" + name + "' has neither binary data nor 'data'");
      }
    }
    if (!in_shared_memory(*tensor_parameters)) {
      if (auto ok = tensor.check(); !ok)
        return internal("output '" + name + "': " + ok.error().message());
    }
    outputs.push_back({name, std::move(tensor), std::move(*tensor_parameters)});
  }
  return InferResult(answer.value("model_name", std::string()),
                     answer.value("model_version", std::string()),
                     answer.value("id", std::string()), std::move(outputs), std::move(*parameters));
}

}  // namespace

Result<RestRequest> encode_rest_control(ControlMethod method, std::string_view request) {
  using M = ControlMethod;
  auto fields = request_json(method, request);
  if (!fields) return fields.error();
  const json& r = *fields;
  protocol::RouteValues values;
  values.version = text_field(r, "version");
  json body = json::object();
  switch (method) {
    case M::RepositoryModelLoad:
    case M::RepositoryModelUnload:
      values.model = text_field(r, "model_name");
      if (auto p = r.find("parameters"); p != r.end())
        body["parameters"] = repository_parameters(*p);
      break;
    case M::RepositoryIndex: body["ready"] = r.value("ready", false); break;
    case M::SystemSharedMemoryRegister:
    case M::CudaSharedMemoryRegister:
      values.region = text_field(r, "name");
      body = registration_body(method == M::CudaSharedMemoryRegister, r);
      break;
    case M::SystemSharedMemoryStatus:
    case M::SystemSharedMemoryUnregister:
    case M::CudaSharedMemoryStatus:
    case M::CudaSharedMemoryUnregister: values.region = text_field(r, "name"); break;
    case M::TraceSetting:
      values.model = text_field(r, "model_name");
      body = trace_body(r);
      break;
    case M::LogSettings: body = log_body(r); break;
    default: values.model = text_field(r, "name"); break;
  }
  std::string target = protocol::control_route_path(method, values);
  switch (protocol::spec_of(method).verb) {
    case protocol::RestVerb::Get: return get(std::move(target));
    case protocol::RestVerb::Post: return post(std::move(target), body);
    case protocol::RestVerb::GetOrPost: break;
  }
  if (body.is_null()) return get(std::move(target));  // no changes: only reads the settings
  return post(std::move(target), body);
}

Result<std::string> decode_rest_control(ControlMethod method, int status, std::string_view body) {
  using M = ControlMethod;
  // Health and readiness are the status alone: 200, or 400 (Triton's answer when not).
  if ((method == M::ServerLive || method == M::ServerReady || method == M::ModelReady) &&
      (status == 200 || status == 400)) {
    return response_of(method, {{method == M::ServerLive ? "live" : "ready", status == 200}});
  }
  if (status != 200) return rest_error(status, body);
  json answer;
  if (!body.empty()) {
    answer = json::parse(body.begin(), body.end(), nullptr, false);
    if (answer.is_discarded()) {
      return internal("the " + std::string(method_name(method)) + " answer is not JSON");
    }
  }
  switch (method) {
    case M::ModelConfig: {
      // Triton answers with the configuration itself; the protobuf response wraps it.
      const json config = answer.contains("config") ? answer["config"] : answer;
      return response_of(method, {{"config", config}});
    }
    case M::RepositoryIndex: return response_of(method, {{"models", answer}});
    case M::SystemSharedMemoryStatus:
    case M::CudaSharedMemoryStatus:
      return response_of(method, {{"regions", regions_by_name(answer)}});
    case M::TraceSetting: return response_of(method, {{"settings", trace_settings(answer)}});
    case M::LogSettings: return response_of(method, {{"settings", log_settings(answer)}});
    case M::ServerMetadata:
    case M::ModelMetadata:
    case M::ModelStatistics: return response_of(method, answer);
    default: return std::string();  // the other responses have no fields
  }
}

namespace {

// The gRPC code of an HTTP status, as Triton's HTTP frontend maps them back (and proxies use
// them); other statuses keep their number in the message.
StatusCode code_of(int status) {
  switch (status) {
    case 400: return StatusCode::InvalidArgument;
    case 401: return StatusCode::Unauthenticated;
    case 403: return StatusCode::PermissionDenied;
    case 404: return StatusCode::NotFound;
    case 408: return StatusCode::DeadlineExceeded;
    case 413: return StatusCode::ResourceExhausted;
    case 429:  // a proxy's "too many requests", and gateways that lost the server: try again
    case 502:
    case 503:
    case 504: return StatusCode::Unavailable;
    case 500: return StatusCode::Internal;
    case 501: return StatusCode::Unimplemented;
    default: return StatusCode::Unknown;
  }
}

}  // namespace

Error rest_error(int status, std::string_view body) {
  std::string message(body);
  std::string reason;  // sonic-server's machine-readable reason, beside Triton's "error"
  json parsed = json::parse(body.begin(), body.end(), nullptr, false);
  if (!parsed.is_discarded() && parsed.is_object() && parsed.contains("error") &&
      parsed["error"].is_string()) {
    message = parsed["error"].get<std::string>();
    if (parsed.contains("reason") && parsed["reason"].is_string()) {
      reason = parsed["reason"].get<std::string>();
    }
  }
  while (!message.empty() && (message.back() == '\n' || message.back() == '\r')) message.pop_back();
  if (message.empty()) message = "HTTP status " + std::to_string(status);
  const StatusCode code = code_of(status);
  if (code == StatusCode::Unknown) {
    message = "HTTP status " + std::to_string(status) + ": " + message;
  }
  return Error(code, std::move(message), std::move(reason));
}

}  // namespace sonic::http

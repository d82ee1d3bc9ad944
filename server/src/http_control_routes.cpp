#include "http_control_routes.hpp"

#include <cstdlib>
#include <string>

#include "protocol/control_codec.hpp"
#include "protocol/grpc_wire.hpp"
#include "protocol/invalid.hpp"
#include "protocol/model_config_json.hpp"
#include "protocol/proto_json.hpp"

namespace sonic::server {

namespace {

using protocol::invalid;

using nlohmann::json;
using nlohmann::ordered_json;
namespace pc = protocol;

// An empty 200, Triton's answer to a call that succeeded and returns nothing.
HttpReply done() { return {200, {}, {}, {}}; }

// ---- v2/models/NAME[/versions/VERSION]/config ---------------------------------------------

// The serialized ModelConfig as Triton's JSON (protocol/model_config_json.hpp).
Result<ordered_json> config_json(std::string_view config) {
  auto printed = pc::model_config_to_json(config);
  if (!printed) return printed.error();
  ordered_json document = ordered_json::parse(*printed, nullptr, false);
  if (document.is_discarded()) {
    return Error(StatusCode::Internal, "the model configuration did not print as JSON");
  }
  return document;
}

// ---- v2/repository[/REPOSITORY]/models/NAME/(load|unload) ---------------------------------

// A load's parameters as Triton's http_server.cc reads them (HandleRepositoryControl), every
// value a string: "config", a ModelConfig as JSON, and "file:<path>", a file of the model's
// directory in base64 (tritonclient.http and http_client.cc encode it so); the gRPC call's
// string_param and bytes_param. Triton answers any other name with INTERNAL "unexpected error on
// creating Triton parameter".
Result<void> load_parameters(const json& parameters, pc::RepositoryModelRequest& request) {
  for (const auto& [key, value] : parameters.items()) {
    if (!value.is_string()) return invalid("parameter '" + key + "' must be a string");
    if (key == "config") {
      request.parameters[key] = value.get<std::string>();
    } else if (key.rfind("file:", 0) == 0) {
      auto bytes = pc::base64_decode(value.get<std::string>());
      if (!bytes) return invalid("parameter '" + key + "' must be the file's bytes in base64");
      request.parameters[key] = pc::RepositoryBytes{std::move(*bytes)};
    } else {
      return Error(StatusCode::Internal, "unexpected error on creating Triton parameter (" + key +
                                             " is not a load parameter)");
    }
  }
  return {};
}

// An unload's parameters: Triton reads only unload_dependents ("Unable to parse
// 'unload_dependents'" when it is not a boolean). False is what the gRPC call means without it.
Result<void> unload_parameters(const json& parameters, pc::RepositoryModelRequest& request) {
  auto dependents = parameters.find("unload_dependents");
  if (dependents == parameters.end()) return {};
  if (!dependents->is_boolean()) {
    return invalid("Unable to parse 'unload_dependents': it must be a boolean");
  }
  if (dependents->get<bool>()) request.parameters["unload_dependents"] = true;
  return {};
}

// Triton's HandleRepositoryControl: POST only; a repository name is UNSUPPORTED; the body, when
// there is one, is {"parameters": {...}}.
std::optional<HttpReply> repository_reply(const ControlContext& context, const HttpRequest& request,
                                          const std::vector<std::string_view>& parts) {
  const std::size_t n = parts.size();
  if ((n != 5 && n != 6) || parts[n - 3] != "models" ||
      (parts[n - 1] != "load" && parts[n - 1] != "unload")) {
    return std::nullopt;
  }
  if (request.method != "POST") return method_not_allowed();
  if (n == 6) return error_reply(501, "'repository_name' specification is not supported");
  const bool load = parts[n - 1] == "load";
  auto body = json_body(request.body.view());
  if (!body) return error_reply(body.error());
  pc::RepositoryModelRequest call{{}, std::string(parts[n - 2]), {}};
  if (auto parameters = body->find("parameters"); body->is_object() && parameters != body->end()) {
    if (!parameters->is_object()) return error_reply(400, "'parameters' must be a JSON object");
    auto read = load ? load_parameters(*parameters, call) : unload_parameters(*parameters, call);
    if (!read) return error_reply(read.error());
  }
  auto answer = answer_control(context, load ? "RepositoryModelLoad" : "RepositoryModelUnload",
                               pc::encode_repository_model_request(call));
  if (!answer) return error_reply(answer.error());
  return done();
}

// ---- v2/(systemsharedmemory|cudasharedmemory)[/region/NAME]/ACTION ------------------------

// A field of a registration that must be an unsigned integer (Triton reads it with AsUInt).
Result<std::uint64_t> unsigned_field(const json& body, const char* name, bool required) {
  auto field = body.find(name);
  if (field == body.end()) {
    if (!required) return std::uint64_t{0};
    return invalid(std::string("Shared memory register request has no '") + name + "' field");
  }
  if (!field->is_number_unsigned()) return invalid(std::string("'") + name + "' must be >= 0");
  return field->get<std::uint64_t>();
}

// SystemSharedMemoryRegisterRequest from {"key", "offset" (optional), "byte_size"}.
Result<std::string> system_registration(const std::string& name, const json& body) {
  auto key = body.find("key");
  if (key == body.end()) return invalid("Shared memory register request has no 'key' field");
  if (!key->is_string()) return invalid("'key' must be a string");
  auto offset = unsigned_field(body, "offset", false);
  if (!offset) return offset.error();
  auto byte_size = unsigned_field(body, "byte_size", true);
  if (!byte_size) return byte_size.error();
  return pc::encode_system_shm_registration({name, key->get<std::string>(), *offset, *byte_size});
}

// CudaSharedMemoryRegisterRequest from {"raw_handle": {"b64"}, "device_id", "byte_size"}.
Result<std::string> cuda_registration(const std::string& name, const json& body) {
  auto handle = body.find("raw_handle");
  if (handle == body.end()) {
    return invalid("Shared memory register request has no 'raw_handle' field");
  }
  auto b64 = handle->is_object() ? handle->find("b64") : handle->end();
  if (b64 == handle->end() || !b64->is_string()) {
    return invalid("'raw_handle' must be {\"b64\": the cudaIpcMemHandle_t in base64}");
  }
  auto raw = pc::base64_decode(b64->get<std::string>());
  if (!raw) return invalid("'raw_handle' must be a valid base64 encoded cudaIpcMemHandle_t");
  auto byte_size = unsigned_field(body, "byte_size", true);
  if (!byte_size) return byte_size.error();
  auto device_id = unsigned_field(body, "device_id", true);
  if (!device_id) return device_id.error();
  return pc::encode_cuda_shm_registration(
      {name, std::move(*raw), static_cast<std::int64_t>(*device_id), *byte_size});
}

// The regions' status as Triton's SharedMemoryManager::GetStatus writes it: an array of
// {name, key, offset, byte_size} (system) or {name, device_id, byte_size} (CUDA), numbers.
Result<json> status_json(bool cuda, std::string_view answer) {
  json regions = json::array();
  if (cuda) {
    auto status = pc::decode_cuda_shm_status(answer);
    if (!status) return status.error();
    for (const auto& r : *status) {
      regions.push_back({{"name", r.name}, {"device_id", r.device_id}, {"byte_size", r.byte_size}});
    }
    return regions;
  }
  auto status = pc::decode_system_shm_status(answer);
  if (!status) return status.error();
  for (const auto& r : *status) {
    regions.push_back(
        {{"name", r.name}, {"key", r.key}, {"offset", r.offset}, {"byte_size", r.byte_size}});
  }
  return regions;
}

// Triton's HandleSystemSharedMemory and HandleCudaSharedMemory: status by GET, the rest by
// POST; a registration needs a region name.
std::optional<HttpReply> shared_memory_reply(const ControlContext& context,
                                             const HttpRequest& request,
                                             const std::vector<std::string_view>& parts) {
  std::string name;
  std::string_view action;
  if (parts.size() == 3) {
    action = parts[2];
  } else if (parts.size() == 5 && parts[2] == "region") {
    name = std::string(parts[3]);
    action = parts[4];
  } else {
    return std::nullopt;
  }
  if (action != "status" && action != "register" && action != "unregister") return std::nullopt;
  if (request.method != (action == "status" ? "GET" : "POST")) return method_not_allowed();
  const bool cuda = parts[1] == "cudasharedmemory";
  const std::string kind = cuda ? "cuda" : "system";
  std::string method = std::string(cuda ? "Cuda" : "System") + "SharedMemory";
  Result<std::string> call = pc::encode_region_name(name);
  if (action == "register") {
    if (name.empty()) {
      return error_reply(
          400, "'region name' is necessary to register " + kind + " shared memory region");
    }
    auto body = json_body(request.body.view());
    if (!body) return error_reply(body.error());
    call = cuda ? cuda_registration(name, *body) : system_registration(name, *body);
  }
  if (!call) return error_reply(call.error());
  method += action == "status" ? "Status" : action == "register" ? "Register" : "Unregister";
  auto answer = answer_control(context, method, *call);
  if (!answer) return error_reply(answer.error());
  if (action != "status") return done();
  auto regions = status_json(cuda, *answer);
  if (!regions) return error_reply(regions.error());
  return json_reply(200, *regions);
}

}  // namespace

HttpReply model_config_reply(const ControlContext& context, const HttpRequest& request,
                             const ModelRoute& route) {
  if (request.method != "GET") return method_not_allowed();
  auto answer =
      answer_control(context, "ModelConfig", pc::encode_model_ref({route.name, route.version}));
  if (!answer) return error_reply(answer.error());
  auto config = pc::decode_model_config_response(*answer);
  if (!config) return error_reply(config.error());
  auto document = config_json(*config);
  if (!document) return error_reply(document.error());
  return json_reply(200, *document);
}

std::optional<HttpReply> control_reply(const ControlContext& context, const HttpRequest& request,
                                       const std::vector<std::string_view>& parts) {
  if (parts.size() < 3 || parts[0] != "v2") return std::nullopt;
  if (parts[1] == "repository") return repository_reply(context, request, parts);
  if (parts[1] == "systemsharedmemory" || parts[1] == "cudasharedmemory") {
    return shared_memory_reply(context, request, parts);
  }
  return std::nullopt;
}

}  // namespace sonic::server

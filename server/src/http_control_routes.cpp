#include "http_control_routes.hpp"

#include <array>
#include <cstdlib>
#include <string>

#include "protocol/control_codec.hpp"
#include "protocol/control_methods.hpp"
#include "protocol/grpc_wire.hpp"
#include "protocol/invalid.hpp"
#include "protocol/model_config_json.hpp"
#include "protocol/proto_json.hpp"
#include "protocol/settings_codec.hpp"

namespace sonic::server {

namespace {

using protocol::invalid;

using nlohmann::json;
using nlohmann::ordered_json;
namespace pc = protocol;

json tensors_json(const std::vector<TensorMetadata>& tensors) {
  json out = json::array();
  for (const auto& t : tensors) {
    out.push_back({{"name", t.name}, {"datatype", to_string(t.dtype)}, {"shape", t.shape}});
  }
  return out;
}

// Triton's statistics extension over HTTP (docs/protocol/extension_statistics.md): counts and
// durations as JSON numbers; cache_hit, which sonic has no cache for, as zeros.
json duration_json(const Duration& d) { return json{{"count", d.count}, {"ns", d.ns}}; }

json statistics_json(const ModelStatistics& s) {
  json batches = json::array();
  for (const auto& b : s.batch_stats) {
    batches.push_back({{"batch_size", b.batch_size},
                       {"compute_input", duration_json(b.compute_input)},
                       {"compute_infer", duration_json(b.compute_infer)},
                       {"compute_output", duration_json(b.compute_output)}});
  }
  return json{{"name", s.name},
              {"version", s.version},
              {"last_inference", s.last_inference_ms},
              {"inference_count", s.inference_count},
              {"execution_count", s.execution_count},
              {"inference_stats",
               {{"success", duration_json(s.success)},
                {"fail", duration_json(s.fail)},
                {"queue", duration_json(s.queue)},
                {"compute_input", duration_json(s.compute_input)},
                {"compute_infer", duration_json(s.compute_infer)},
                {"compute_output", duration_json(s.compute_output)},
                {"cache_hit", duration_json(Duration{})}}},
              {"batch_stats", std::move(batches)}};
}

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

// Triton's HandleRepositoryControl: a repository name is UNSUPPORTED; the body, when there is
// one, is {"parameters": {...}}.
HttpReply repository_control(const ControlContext& context, ControlMethod method,
                             const pc::RouteValues& route, const HttpRequest& request) {
  if (!route.repository.empty()) {
    return error_reply(501, "'repository_name' specification is not supported");
  }
  const bool load = method == ControlMethod::RepositoryModelLoad;
  auto body = json_body(request.body.view());
  if (!body) return error_reply(body.error());
  pc::RepositoryModelRequest call{{}, route.model, {}};
  if (auto parameters = body->find("parameters"); body->is_object() && parameters != body->end()) {
    if (!parameters->is_object()) return error_reply(400, "'parameters' must be a JSON object");
    auto read = load ? load_parameters(*parameters, call) : unload_parameters(*parameters, call);
    if (!read) return error_reply(read.error());
  }
  auto answer = answer_control(context, method, pc::encode_repository_model_request(call));
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

// Triton's HandleSystemSharedMemory and HandleCudaSharedMemory; a registration needs a region
// name.
HttpReply shared_memory(const ControlContext& context, ControlMethod method,
                        const pc::RouteValues& route, const HttpRequest& request) {
  using M = ControlMethod;
  const bool cuda = method == M::CudaSharedMemoryStatus || method == M::CudaSharedMemoryRegister ||
                    method == M::CudaSharedMemoryUnregister;
  Result<std::string> call = pc::encode_region_name(route.region);
  if (method == M::SystemSharedMemoryRegister || method == M::CudaSharedMemoryRegister) {
    if (route.region.empty()) {
      return error_reply(400, std::string("'region name' is necessary to register ") +
                                  (cuda ? "cuda" : "system") + " shared memory region");
    }
    auto body = json_body(request.body.view());
    if (!body) return error_reply(body.error());
    call = cuda ? cuda_registration(route.region, *body) : system_registration(route.region, *body);
  }
  if (!call) return error_reply(call.error());
  auto answer = answer_control(context, method, *call);
  if (!answer) return error_reply(answer.error());
  if (method != M::SystemSharedMemoryStatus && method != M::CudaSharedMemoryStatus) return done();
  auto regions = status_json(cuda, *answer);
  if (!regions) return error_reply(regions.error());
  return json_reply(200, *regions);
}

// ---- the other methods, as Triton's HTTP frontend answers them ----------------------------

HttpReply health(const ControlContext& context, ControlMethod method, const pc::RouteValues& route,
                 const HttpRequest&) {
  // Triton answers with the status alone: 200, or 400 when not live or ready.
  auto answer = answer_control(context, method,
                               method == ControlMethod::ModelReady
                                   ? pc::encode_model_ref({route.model, route.version})
                                   : std::string());
  if (!answer) return error_reply(answer.error());
  auto yes = pc::decode_flag(*answer);
  if (!yes) return error_reply(yes.error());
  if (!*yes && method == ControlMethod::ModelReady) {
    return error_reply(400, "Model version not ready");
  }
  return {*yes ? 200 : 400, {}, {}, {}};
}

// The extensions the gRPC port lists (both ports serve the same control calls), and the
// binary tensor data extension, which is HTTP's.
HttpReply server_metadata(const ControlContext& context, ControlMethod method,
                          const pc::RouteValues&, const HttpRequest&) {
  auto answer = answer_control(context, method, {});
  if (!answer) return error_reply(answer.error());
  auto metadata = pc::decode_server_metadata(*answer);
  if (!metadata) return error_reply(metadata.error());
  metadata->extensions.push_back("binary_tensor_data");
  return json_reply(200, json{{"name", metadata->name},
                              {"version", metadata->version},
                              {"extensions", metadata->extensions}});
}

HttpReply model_metadata(const ControlContext& context, ControlMethod method,
                         const pc::RouteValues& route, const HttpRequest&) {
  auto answer = answer_control(context, method, pc::encode_model_ref({route.model, route.version}));
  if (!answer) return error_reply(answer.error());
  auto metadata = pc::decode_model_metadata(*answer);
  if (!metadata) return error_reply(metadata.error());
  return json_reply(200, json{{"name", metadata->name},
                              {"versions", metadata->versions},
                              {"platform", metadata->platform},
                              {"inputs", tensors_json(metadata->inputs)},
                              {"outputs", tensors_json(metadata->outputs)}});
}

// The model's configuration as Triton prints it (core src/model_config_utils.cc,
// ModelConfigToJson).
HttpReply model_config(const ControlContext& context, ControlMethod method,
                       const pc::RouteValues& route, const HttpRequest&) {
  auto answer = answer_control(context, method, pc::encode_model_ref({route.model, route.version}));
  if (!answer) return error_reply(answer.error());
  auto config = pc::decode_model_config_response(*answer);
  if (!config) return error_reply(config.error());
  auto document = config_json(*config);
  if (!document) return error_reply(document.error());
  return json_reply(200, *document);
}

HttpReply model_statistics(const ControlContext& context, ControlMethod method,
                           const pc::RouteValues& route, const HttpRequest&) {
  auto answer = answer_control(context, method, pc::encode_model_ref({route.model, route.version}));
  if (!answer) return error_reply(answer.error());
  auto models = pc::decode_model_statistics(*answer);
  if (!models) return error_reply(models.error());
  json all = json::array();
  for (const auto& s : *models) all.push_back(statistics_json(s));
  return json_reply(200, json{{"model_stats", std::move(all)}});
}

// Triton's model repository extension: every model (or, with {"ready": true}, the ready ones)
// as {name, version, state, reason}, the empty fields left out as Triton's JSON leaves them.
HttpReply repository_index(const ControlContext& context, ControlMethod method,
                           const pc::RouteValues& route, const HttpRequest& request) {
  const std::string_view body = request.body.view();
  bool ready_only = false;
  if (!body.empty()) {
    const json query = json::parse(body.begin(), body.end(), nullptr, false);
    if (query.is_discarded() || !query.is_object()) {
      return error_reply(400, "failed to parse the request JSON buffer");
    }
    if (auto ready = query.find("ready"); ready != query.end()) {
      if (!ready->is_boolean()) {
        return error_reply(400, "Invalid value for 'ready': expected a boolean");
      }
      ready_only = ready->get<bool>();
    }
  }
  auto answer =
      answer_control(context, method, pc::encode_repository_query({route.repository, ready_only}));
  if (!answer) return error_reply(answer.error());
  auto index = pc::decode_repository_index(*answer);
  if (!index) return error_reply(index.error());
  json models = json::array();
  for (const auto& model : *index) {
    json entry{{"name", model.name}};
    if (!model.version.empty()) entry["version"] = model.version;
    if (model.state != ModelState::Unknown) entry["state"] = model_state_name(model.state);
    if (!model.reason.empty()) entry["reason"] = model.reason;
    models.push_back(std::move(entry));
  }
  return json_reply(200, models);
}

// Triton's HandleLogging: GET reads the settings, POST changes them; the answer is the whole
// settings as plain JSON values.
HttpReply log_settings(const ControlContext& context, ControlMethod method, const pc::RouteValues&,
                       const HttpRequest& request) {
  pc::LogSettingMap changes;
  if (request.method == "POST") {
    auto body = json_body(request.body.view());
    if (!body) return error_reply(body.error());
    auto read = pc::log_settings_from_rest(*body);
    if (!read) return error_reply(read.error());
    changes = std::move(*read);
  }
  auto answer = answer_control(context, method, pc::encode_log_settings(changes));
  if (!answer) return error_reply(answer.error());
  auto settings = pc::decode_log_settings(*answer);
  if (!settings) return error_reply(settings.error());
  return json_reply(200, pc::log_settings_to_rest(*settings));
}

// Triton's HandleTrace: the global settings, or a model's, read by GET, changed by POST.
HttpReply trace_setting(const ControlContext& context, ControlMethod method,
                        const pc::RouteValues& route, const HttpRequest& request) {
  pc::TraceSettingChange change{route.model, {}};
  if (request.method == "POST") {
    auto body = json_body(request.body.view());
    if (!body) return error_reply(body.error());
    auto read = pc::trace_settings_from_rest(*body);
    if (!read) return error_reply(read.error());
    change.settings = std::move(*read);
  }
  auto answer = answer_control(context, method, pc::encode_trace_setting_request(change));
  if (!answer) return error_reply(answer.error());
  auto settings = pc::decode_trace_settings(*answer);
  if (!settings) return error_reply(settings.error());
  return json_reply(200, pc::trace_settings_to_rest(*settings));
}

// One method's REST handler.
using Handler = HttpReply (*)(const ControlContext&, ControlMethod, const pc::RouteValues&,
                              const HttpRequest&);

constexpr std::array<Handler, pc::kControlMethods.size()> handlers() {
  using M = ControlMethod;
  std::array<Handler, pc::kControlMethods.size()> table{};
  auto set = [&table](M method, Handler handler) {
    table[static_cast<std::size_t>(method)] = handler;
  };
  set(M::ServerLive, health);
  set(M::ServerReady, health);
  set(M::ModelReady, health);
  set(M::ServerMetadata, server_metadata);
  set(M::ModelMetadata, model_metadata);
  set(M::ModelConfig, model_config);
  set(M::ModelStatistics, model_statistics);
  set(M::RepositoryIndex, repository_index);
  set(M::RepositoryModelLoad, repository_control);
  set(M::RepositoryModelUnload, repository_control);
  for (M method :
       {M::SystemSharedMemoryStatus, M::SystemSharedMemoryRegister, M::SystemSharedMemoryUnregister,
        M::CudaSharedMemoryStatus, M::CudaSharedMemoryRegister, M::CudaSharedMemoryUnregister}) {
    set(method, shared_memory);
  }
  set(M::TraceSetting, trace_setting);
  set(M::LogSettings, log_settings);
  return table;
}

constexpr auto kHandlers = handlers();

}  // namespace

HttpReply answer_http_control(const ControlContext& context, const pc::RouteMatch& route,
                              const HttpRequest& request) {
  const pc::ControlMethodSpec& spec = pc::spec_of(route.method);
  const bool get = request.method == "GET";
  const bool verb_ok = spec.verb == pc::RestVerb::Get    ? get
                       : spec.verb == pc::RestVerb::Post ? request.method == "POST"
                                                         : get || request.method == "POST";
  if (!verb_ok) return method_not_allowed();
  const Handler handler = kHandlers[static_cast<std::size_t>(route.method)];
  if (!handler) return error_reply(unimplemented(spec.name));
  return handler(context, route.method, route.values, request);
}

}  // namespace sonic::server
